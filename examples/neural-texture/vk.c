/* examples/neural-texture/vk.c — the application's Vulkan plumbing (vk.h). */
#include "vk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                  VkDebugUtilsMessageTypeFlagsEXT type,
                                                  const VkDebugUtilsMessengerCallbackDataEXT *d, void *user) {
    (void)type;
    if (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        ((vkx *)user)->messages++;
        fprintf(stderr, "validation: %s\n", d && d->pMessage ? d->pMessage : "(no message)");
    }
    return VK_FALSE;
}

static bool has_layer(const char *name) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *lp = calloc(n ? n : 1, sizeof *lp);
    bool found = false;
    if (lp && vkEnumerateInstanceLayerProperties(&n, lp) >= 0)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(lp[i].layerName, name) == 0;
    free(lp);
    return found;
}

static int make_instance(vkx *v, const char *const *extra, uint32_t nextra) {
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo ai = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    ai.pApplicationName = "neural-texture";
    ai.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &ai;
    VkDebugUtilsMessengerCreateInfoEXT mi = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_message;
    mi.pUserData = v;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, &mi};
    vf.enabledValidationFeatureCount = 1;
    vf.pEnabledValidationFeatures = &sync;
    const char *exts[16];
    uint32_t next = 0;
    for (uint32_t i = 0; i < nextra && next < 15; i++) exts[next++] = extra[i];
    if (v->validation) {
        if (!has_layer(layer)) {
            fprintf(stderr, "validation requested but %s is not installed (apt install vulkan-validationlayers)\n",
                    layer);
            return 1;
        }
        ci.pNext = &vf;
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = &layer;
        exts[next++] = ext;
    }
    ci.enabledExtensionCount = next;
    ci.ppEnabledExtensionNames = next ? exts : NULL;
    VkResult r = vkCreateInstance(&ci, NULL, &v->instance);
    if (r != VK_SUCCESS) {
        v->instance = VK_NULL_HANDLE;
        printf("skipped: no usable Vulkan instance (vkCreateInstance: VkResult %d)\n", (int)r);
        return 77;
    }
    if (v->validation) {
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(v->instance, "vkCreateDebugUtilsMessengerEXT");
        if (!create || create(v->instance, &mi, NULL, &v->messenger) != VK_SUCCESS) {
            fprintf(stderr, "vkCreateDebugUtilsMessengerEXT failed\n");
            return 1;
        }
    }
    return 0;
}

static bool has_swapchain(VkPhysicalDevice d) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(d, NULL, &n, NULL);
    VkExtensionProperties *ep = calloc(n ? n : 1, sizeof *ep);
    bool found = false;
    if (ep && vkEnumerateDeviceExtensionProperties(d, NULL, &n, ep) >= 0)
        for (uint32_t i = 0; i < n; i++) found |= strcmp(ep[i].extensionName, VK_KHR_SWAPCHAIN_EXTENSION_NAME) == 0;
    free(ep);
    return found;
}

/* The first discrete, else integrated, else any device with Vulkan 1.2 and a
 * graphics + compute queue (that presents to v->surface, when set). */
static int pick_device(vkx *v) {
    VkPhysicalDevice devs[16];
    uint32_t nd = 16;
    if (vkEnumeratePhysicalDevices(v->instance, &nd, devs) < 0 || nd == 0) {
        printf("skipped: no Vulkan device\n");
        return 77;
    }
    static const VkPhysicalDeviceType order[] = {VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU,
                                                 VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU,
                                                 VK_PHYSICAL_DEVICE_TYPE_OTHER, VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU};
    for (int o = 0; o < 5; o++)
        for (uint32_t i = 0; i < nd; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(devs[i], &p);
            if (p.deviceType != order[o] || p.apiVersion < VK_API_VERSION_1_2) continue;
            if (v->surface && !has_swapchain(devs[i])) continue;
            VkQueueFamilyProperties qp[16];
            uint32_t nq = 16;
            vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nq, qp);
            for (uint32_t q = 0; q < nq; q++) {
                VkQueueFlags want = VK_QUEUE_GRAPHICS_BIT | VK_QUEUE_COMPUTE_BIT;
                VkBool32 present = VK_TRUE;
                if (v->surface && vkGetPhysicalDeviceSurfaceSupportKHR(devs[i], q, v->surface, &present) != VK_SUCCESS)
                    present = VK_FALSE;
                if ((qp[q].queueFlags & want) == want && present) {
                    v->phys = devs[i], v->props = p, v->qf = q;
                    return 0;
                }
            }
        }
    printf("skipped: no Vulkan 1.2 device with a graphics + compute queue%s\n",
           v->surface ? " that presents to the window" : "");
    return 77;
}

int vkx_open_instance(vkx *v, bool validation, const char *const *ext, uint32_t n) {
    memset(v, 0, sizeof *v);
    v->validation = validation;
    return make_instance(v, ext, n);
}

int vkx_open_device(vkx *v) {
    int rc = pick_device(v);
    if (rc) return rc;
    vkGetPhysicalDeviceMemoryProperties(v->phys, &v->memprops);
    /* 16-bit storage when the device has it: what loom's f16 / bf16 shaders need */
    VkPhysicalDeviceVulkan11Features have = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &have};
    vkGetPhysicalDeviceFeatures2(v->phys, &f2);
    v->f11 = (VkPhysicalDeviceVulkan11Features){VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    v->f11.storageBuffer16BitAccess = have.storageBuffer16BitAccess;
    static const float prio = 1.0f;
    v->qci = (VkDeviceQueueCreateInfo){VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    v->qci.queueFamilyIndex = v->qf;
    v->qci.queueCount = 1;
    v->qci.pQueuePriorities = &prio;
    v->dci = (VkDeviceCreateInfo){VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &v->f11};
    v->dci.queueCreateInfoCount = 1;
    v->dci.pQueueCreateInfos = &v->qci;
    static const char *const swapchain = VK_KHR_SWAPCHAIN_EXTENSION_NAME;
    if (v->surface) {
        v->dci.enabledExtensionCount = 1;
        v->dci.ppEnabledExtensionNames = &swapchain;
    }
    if (vkCreateDevice(v->phys, &v->dci, NULL, &v->device) != VK_SUCCESS) {
        fprintf(stderr, "vkCreateDevice failed\n");
        return 1;
    }
    vkGetDeviceQueue(v->device, v->qf, 0, &v->queue);
    VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = v->qf;
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if (vkCreateCommandPool(v->device, &pci, NULL, &v->pool) != VK_SUCCESS ||
        vkCreateFence(v->device, &fci, NULL, &v->fence) != VK_SUCCESS) {
        fprintf(stderr, "command pool / fence creation failed\n");
        return 1;
    }
    return 0;
}

void vkx_close(vkx *v) {
    if (v->device) {
        vkDeviceWaitIdle(v->device);
        if (v->fence) vkDestroyFence(v->device, v->fence, NULL);
        if (v->pool) vkDestroyCommandPool(v->device, v->pool, NULL);
        vkDestroyDevice(v->device, NULL);
    }
    if (v->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(v->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(v->instance, v->messenger, NULL);
    }
    if (v->instance) vkDestroyInstance(v->instance, NULL);
}

static int memory_type(vkx *v, uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags fallback) {
    for (int pass = 0; pass < 2; pass++) {
        VkMemoryPropertyFlags f = pass ? fallback : want;
        for (uint32_t i = 0; i < v->memprops.memoryTypeCount; i++)
            if ((bits & (1u << i)) && (v->memprops.memoryTypes[i].propertyFlags & f) == f) return (int)i;
    }
    return -1;
}

int vkx_buffer_create(vkx *v, VkDeviceSize size, VkBufferUsageFlags usage, bool host, vkx_buffer *b) {
    memset(b, 0, sizeof *b);
    b->size = size;
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = size;
    bi.usage = usage;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (vkCreateBuffer(v->device, &bi, NULL, &b->buf) != VK_SUCCESS) return 1;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(v->device, b->buf, &req);
    const VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    int type = host ? memory_type(v, req.memoryTypeBits, hv, hv)
                    : memory_type(v, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = (uint32_t)type;
    if (type < 0 || vkAllocateMemory(v->device, &mai, NULL, &b->mem) != VK_SUCCESS ||
        vkBindBufferMemory(v->device, b->buf, b->mem, 0) != VK_SUCCESS)
        return 1;
    if (host && vkMapMemory(v->device, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map) != VK_SUCCESS) return 1;
    return 0;
}

void vkx_buffer_destroy(vkx *v, vkx_buffer *b) {
    if (b->map) vkUnmapMemory(v->device, b->mem);
    if (b->buf) vkDestroyBuffer(v->device, b->buf, NULL);
    if (b->mem) vkFreeMemory(v->device, b->mem, NULL);
    memset(b, 0, sizeof *b);
}

int vkx_image_memory(vkx *v, VkImage img, VkDeviceMemory *mem) {
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(v->device, img, &req);
    int type = memory_type(v, req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0);
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = (uint32_t)type;
    if (type < 0 || vkAllocateMemory(v->device, &mai, NULL, mem) != VK_SUCCESS) return 1;
    return vkBindImageMemory(v->device, img, *mem, 0) != VK_SUCCESS;
}

VkShaderModule vkx_shader(vkx *v, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open the compiled shader\n", path);
        return VK_NULL_HANDLE;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint32_t *code = n > 0 && n % 4 == 0 ? malloc((size_t)n) : NULL;
    VkShaderModule m = VK_NULL_HANDLE;
    if (code && fread(code, 1, (size_t)n, f) == (size_t)n) {
        VkShaderModuleCreateInfo ci = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        ci.codeSize = (size_t)n;
        ci.pCode = code;
        if (vkCreateShaderModule(v->device, &ci, NULL, &m) != VK_SUCCESS) m = VK_NULL_HANDLE;
    }
    if (!m) fprintf(stderr, "%s: not a valid SPIR-V module\n", path);
    free(code);
    fclose(f);
    return m;
}

int vkx_submit_wait(vkx *v, VkCommandBuffer cb) {
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    if (vkQueueSubmit(v->queue, 1, &si, v->fence) != VK_SUCCESS) return 1;
    VkResult r = vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(v->device, 1, &v->fence);
    return r != VK_SUCCESS;
}
