/* loom/vulkan.h — embedding loom in a Vulkan application: a Vulkan backend on
 * the application's own instance, device and queue, and plan tensors that live
 * in the application's own VkBuffers (no copies).
 *
 * defines: loom_vulkan_adopt, loom_vulkan_backend_create,
 *          loom_vulkan_bind_buffer.
 *
 * Not part of loom/loom.h: it includes <vulkan/vulkan.h>, so include it
 * yourself. The functions exist when the library was built with the Vulkan
 * backend (LOOM_VULKAN=AUTO or ON and the Vulkan headers present;
 * `loom_backend_list` names "vulkan").
 *
 * What the application provides, and keeps:
 * - An instance created with apiVersion >= 1.2 and a device of a physical
 *   device that supports Vulkan 1.2. loom never destroys them (nor the queue
 *   or bound buffers): destroy every loom plan and then the loom backend
 *   first, then your objects.
 * - Device features: loom cannot ask a VkDevice what was enabled. Enable, when
 *   the physical device has them, storageBuffer16BitAccess (needed for f16 and
 *   bf16 tensors), storageBuffer8BitAccess (u8 tensors), shaderFloat16,
 *   shaderInt8, shaderInt16 and shaderInt64 — exactly what loom enables on the
 *   devices it creates itself. Pass the VkDeviceCreateInfo you used as
 *   loom_vulkan_adopt.device_create_info and loom reads the enabled set from
 *   it (pEnabledFeatures and the pNext chain: VkPhysicalDeviceFeatures2,
 *   VkPhysicalDeviceVulkan11Features / 12Features, the 16-bit / 8-bit
 *   storage and float16-int8 feature structs); without it loom assumes every
 *   one of those features the device supports was enabled. A feature that is
 *   missing makes the plans that need it (f16 / bf16 without 16-bit storage)
 *   fail at loom_plan_compile with a message naming the feature; f32 plans
 *   need none of them.
 * - A queue of a family with VK_QUEUE_COMPUTE_BIT. loom submits to it, and
 *   waits on its own fence, inside loom_plan_run / loom_plan_read /
 *   loom_plan_write (and compile, to upload initial values): every loom call
 *   returns with loom's work finished. Vulkan requires queue access to be
 *   externally synchronized: do not submit to the same queue from another
 *   thread while a loom call runs.
 * - Validation: LOOM_VULKAN_VALIDATION does not apply to an adopted instance
 *   (loom cannot add layers to it): enable VK_LAYER_KHRONOS_validation and
 *   your own messenger when you create the instance; its messages about
 *   loom's work reach your callback.
 *
 * Thread safety: as for any loom backend, one thread at a time per backend.
 */
#ifndef LOOM_VULKAN_API_H
#define LOOM_VULKAN_API_H

#include <vulkan/vulkan.h>

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The application's objects. Zero-initialise, then fill. */
typedef struct loom_vulkan_adopt {
    VkInstance instance;              /* the application's instance (not NULL) */
    VkPhysicalDevice physical_device; /* the one `device` was created from */
    VkDevice device;                  /* the application's logical device (not NULL) */
    VkQueue queue;                    /* a queue of queue_family */
    uint32_t queue_family;            /* must support VK_QUEUE_COMPUTE_BIT */
    /* How loom finds the instance's functions: NULL = loom's own copy of the
     * loader (libvulkan.so.1, opened with dlopen). Give yours when the
     * application uses another loader or a function-pointer library
     * (volk: vkGetInstanceProcAddr after volkInitialize). */
    PFN_vkGetInstanceProcAddr get_instance_proc_addr;
    /* Optional: the create info `device` was made with (read during the call
     * only), so loom knows which features are enabled; NULL = every feature
     * loom uses that the device supports (see above). */
    const VkDeviceCreateInfo *device_create_info;
} loom_vulkan_adopt;

/* A Vulkan backend running on the application's device and queue. Errors:
 * LOOM_ERR_INVALID_ARG for a NULL handle or a queue family that does not
 * exist or lacks compute (the message names the family and its flags),
 * LOOM_ERR_UNSUPPORTED for a device older than Vulkan 1.2, LOOM_ERR_BACKEND
 * when functions cannot be loaded. Destroy with loom_backend_destroy: it frees
 * loom's memory, pipelines and command pool, and leaves the instance, device
 * and queue alone. */
loom_status loom_vulkan_backend_create(loom_ctx *ctx, const loom_vulkan_adopt *adopt, loom_backend **out);

/* From now on, leaf tensor t (an input, parameter or state) of plan p lives in
 * the application's buffer buf, bytes [offset, offset + bytes): no copy is
 * made, the memory loom had for t is freed (its contents are not carried
 * over), and the plan records its commands again before its next run (one
 * call per tensor; bind everything before running to record once).
 * loom_plan_write / loom_plan_read on t keep working: they copy to and from
 * buf. The plan never destroys buf; buf must outlive the plan (or a later
 * call binding t elsewhere).
 *
 * The buffer: created on p's device with usage STORAGE_BUFFER (the shaders
 * read and write it) plus TRANSFER_SRC and TRANSFER_DST (for loom_plan_read /
 * loom_plan_write), memory bound, exclusive to queue_family or
 * VK_SHARING_MODE_CONCURRENT. The application's own writes must be finished
 * and visible before loom_plan_run (host writes to coherent memory are; work
 * on another queue needs a fence or semaphore wait); loom's writes are
 * finished when loom_plan_run returns. t's layout in the buffer is loom's:
 * row-major, packed, the tensor's dtype.
 *
 * Errors (LOOM_ERR_INVALID_ARG, naming the tensor): p not on a Vulkan
 * backend; t not from p's graph, not an input, parameter or state; t shared
 * with another plan (loom_plan_desc.share, either direction: bind before
 * compiling the sharing plan); buf VK_NULL_HANDLE; bytes smaller than t's
 * size; offset not a multiple of the device's minStorageBufferOffsetAlignment
 * (and of 4). */
loom_status loom_vulkan_bind_buffer(loom_plan *p, const loom_tensor *t, VkBuffer buf, VkDeviceSize offset,
                                    VkDeviceSize bytes);

#ifdef __cplusplus
}
#endif
#endif
