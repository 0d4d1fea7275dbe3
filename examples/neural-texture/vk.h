/* examples/neural-texture/vk.h — the application's own Vulkan plumbing: an
 * instance (with the Khronos validation layer on request), one device with a
 * graphics + compute queue (that can also present to a surface, when the
 * window made one before the device), buffers, shader modules and one-shot
 * submits. Nothing here knows about loom. */
#ifndef NT_VK_H
#define NT_VK_H

#include <stdbool.h>
#include <stddef.h>
#include <vulkan/vulkan.h>

typedef struct vkx {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    int messages; /* validation warnings and errors seen */
    bool validation;
    VkSurfaceKHR surface; /* set between vkx_open_instance and vkx_open_device for a window */
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceMemoryProperties memprops;
    VkDevice device;
    VkDeviceCreateInfo dci; /* as created: loom reads the enabled features from it */
    VkPhysicalDeviceVulkan11Features f11;
    VkDeviceQueueCreateInfo qci;
    uint32_t qf;
    VkQueue queue;
    VkCommandPool pool;
    VkFence fence;
} vkx;

typedef struct vkx_buffer {
    VkBuffer buf;
    VkDeviceMemory mem;
    VkDeviceSize size;
    void *map; /* host-visible buffers: mapped for their lifetime */
} vkx_buffer;

/* The instance, with the n extra instance extensions `ext` (a window's
 * surface extensions). 0 = ready; 77 = no usable Vulkan instance (reason
 * printed); 1 = failure. */
int vkx_open_instance(vkx *v, bool validation, const char *const *ext, uint32_t n);
/* The device, queue, command pool and fence; with v->surface set, the queue
 * can present to it and VK_KHR_swapchain is enabled. 0 / 77 / 1 as above. */
int vkx_open_device(vkx *v);
void vkx_close(vkx *v);
/* host: host-visible and coherent (mapped); else device-local where there is such memory. */
int vkx_buffer_create(vkx *v, VkDeviceSize size, VkBufferUsageFlags usage, bool host, vkx_buffer *b);
void vkx_buffer_destroy(vkx *v, vkx_buffer *b);
int vkx_image_memory(vkx *v, VkImage img, VkDeviceMemory *mem);
VkShaderModule vkx_shader(vkx *v, const char *path);
/* Submit one command buffer and wait for it. */
int vkx_submit_wait(vkx *v, VkCommandBuffer cb);

#endif
