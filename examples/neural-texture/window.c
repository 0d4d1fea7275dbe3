/* examples/neural-texture/window.c — the --window mode (window.h): GLFW for
 * the window and the surface, a FIFO swapchain on the application's queue.
 *
 * Each frame: acquire an image; one command buffer copies the two RGBA8
 * buffers into a staging image (target on the left, reconstruction on the
 * right) and blits it, scaled, into the swapchain image (the blit also
 * converts RGBA to the swapchain's BGRA); the submit waits on the acquire
 * semaphore and signals the image's own "done" semaphore, which the present
 * waits on; the application waits for the submit's fence, so one frame is in
 * flight and the acquire semaphore is free again. An out-of-date swapchain
 * (resized window) is recreated. Without GLFW (NT_HAVE_GLFW unset) only
 * nt_window_init is real: it says the example was built without it. */
#include "window.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef NT_HAVE_GLFW

int nt_window_init(const char *const **ext, uint32_t *n) {
    *ext = NULL, *n = 0;
    fprintf(stderr, "neural-texture: --window: built without GLFW (install libglfw3-dev and rebuild the example)\n");
    return 1;
}
int nt_window_open(nt_window **out, vkx *v, int width, int height) {
    (void)v, (void)width, (void)height;
    *out = NULL;
    return 1;
}
int nt_window_swapchain(nt_window *w, vkx *v) { return (void)w, (void)v, 1; }
int nt_window_present(nt_window *w, vkx *v, const vkx_buffer *left, const vkx_buffer *right, int size) {
    return (void)w, (void)v, (void)left, (void)right, (void)size, 1;
}
void nt_window_close(nt_window *w, vkx *v) { (void)w, (void)v; }

#else

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>

enum { MAX_IMAGES = 8 };

struct nt_window {
    GLFWwindow *win;
    VkSwapchainKHR swapchain;
    VkFormat format;
    VkExtent2D extent;
    uint32_t nimages;
    VkImage images[MAX_IMAGES];
    VkSemaphore done[MAX_IMAGES]; /* per swapchain image: the copy is written, present may read */
    VkSemaphore acquired;
    VkCommandBuffer cb;
    VkFence fence;
    VkImage staging; /* 2 size x size, RGBA8: the two halves */
    VkDeviceMemory staging_mem;
    int staging_size;
};

static void on_glfw_error(int code, const char *what) { fprintf(stderr, "neural-texture: GLFW error %d: %s\n", code, what); }

int nt_window_init(const char *const **ext, uint32_t *n) {
    *ext = NULL, *n = 0;
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit()) {
        fprintf(stderr, "neural-texture: --window: GLFW cannot start (no display? set DISPLAY, or run headless "
                        "without --window)\n");
        return 1;
    }
    if (!glfwVulkanSupported()) {
        fprintf(stderr, "neural-texture: --window: GLFW finds no Vulkan loader able to present\n");
        glfwTerminate();
        return 1;
    }
    *ext = glfwGetRequiredInstanceExtensions(n);
    if (!*ext) {
        fprintf(stderr, "neural-texture: --window: no Vulkan surface extension for this display\n");
        glfwTerminate();
        return 1;
    }
    return 0;
}

int nt_window_open(nt_window **out, vkx *v, int width, int height) {
    nt_window *w = calloc(1, sizeof *w);
    *out = w;
    if (!w) return 1;
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    w->win = glfwCreateWindow(width, height, "neural-texture: target | reconstruction", NULL, NULL);
    if (!w->win) return fprintf(stderr, "neural-texture: --window: glfwCreateWindow failed\n"), 1;
    VkResult r = glfwCreateWindowSurface(v->instance, w->win, NULL, &v->surface);
    if (r != VK_SUCCESS) {
        v->surface = VK_NULL_HANDLE;
        return fprintf(stderr, "neural-texture: --window: glfwCreateWindowSurface: VkResult %d\n", (int)r), 1;
    }
    return 0;
}

/* An 8-bit UNORM format when the surface has one (the blit then copies the
 * values; an sRGB one would re-encode them), else its first. */
static VkSurfaceFormatKHR pick_format(vkx *v) {
    VkSurfaceFormatKHR f[64];
    uint32_t n = 64;
    if (vkGetPhysicalDeviceSurfaceFormatsKHR(v->phys, v->surface, &n, f) < 0 || n == 0)
        return (VkSurfaceFormatKHR){VK_FORMAT_UNDEFINED, VK_COLOR_SPACE_SRGB_NONLINEAR_KHR};
    for (uint32_t i = 0; i < n; i++)
        if (f[i].format == VK_FORMAT_B8G8R8A8_UNORM || f[i].format == VK_FORMAT_R8G8B8A8_UNORM) return f[i];
    return f[0];
}

static void destroy_swapchain(nt_window *w, vkx *v) {
    for (uint32_t i = 0; i < MAX_IMAGES; i++)
        if (w->done[i]) vkDestroySemaphore(v->device, w->done[i], NULL), w->done[i] = VK_NULL_HANDLE;
    if (w->swapchain) vkDestroySwapchainKHR(v->device, w->swapchain, NULL);
    w->swapchain = VK_NULL_HANDLE;
    w->nimages = 0;
}

/* (Re)create the swapchain for the window's current size; extent 0 x 0
 * (minimised) leaves none. */
static int make_swapchain(nt_window *w, vkx *v) {
    vkDeviceWaitIdle(v->device);
    destroy_swapchain(w, v);
    VkSurfaceCapabilitiesKHR caps;
    if (vkGetPhysicalDeviceSurfaceCapabilitiesKHR(v->phys, v->surface, &caps) != VK_SUCCESS)
        return fprintf(stderr, "neural-texture: vkGetPhysicalDeviceSurfaceCapabilitiesKHR failed\n"), 1;
    if (!(caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_DST_BIT))
        return fprintf(stderr, "neural-texture: the swapchain images cannot be transfer destinations\n"), 1;
    VkExtent2D e = caps.currentExtent;
    if (e.width == UINT32_MAX) {
        int fw = 0, fh = 0;
        glfwGetFramebufferSize(w->win, &fw, &fh);
        e.width = (uint32_t)fw, e.height = (uint32_t)fh;
        e.width = e.width < caps.minImageExtent.width ? caps.minImageExtent.width : e.width;
        e.width = e.width > caps.maxImageExtent.width ? caps.maxImageExtent.width : e.width;
        e.height = e.height < caps.minImageExtent.height ? caps.minImageExtent.height : e.height;
        e.height = e.height > caps.maxImageExtent.height ? caps.maxImageExtent.height : e.height;
    }
    w->extent = e;
    if (e.width == 0 || e.height == 0) return 0;
    VkSurfaceFormatKHR fmt = pick_format(v);
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(v->phys, fmt.format, &fp);
    if (fmt.format == VK_FORMAT_UNDEFINED || !(fp.optimalTilingFeatures & VK_FORMAT_FEATURE_BLIT_DST_BIT))
        return fprintf(stderr, "neural-texture: no surface format that a blit can write (format %d)\n", (int)fmt.format), 1;
    w->format = fmt.format;
    uint32_t count = caps.minImageCount + 1;
    if (caps.maxImageCount && count > caps.maxImageCount) count = caps.maxImageCount;
    static const VkCompositeAlphaFlagBitsKHR alphas[] = {
        VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, VK_COMPOSITE_ALPHA_INHERIT_BIT_KHR,
        VK_COMPOSITE_ALPHA_PRE_MULTIPLIED_BIT_KHR, VK_COMPOSITE_ALPHA_POST_MULTIPLIED_BIT_KHR};
    VkCompositeAlphaFlagBitsKHR alpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR;
    for (int i = 3; i >= 0; i--)
        if (caps.supportedCompositeAlpha & alphas[i]) alpha = alphas[i];
    VkPresentModeKHR modes[16];
    uint32_t nm = 16;
    vkGetPhysicalDeviceSurfacePresentModesKHR(v->phys, v->surface, &nm, modes); /* FIFO is always among them */
    VkSwapchainCreateInfoKHR ci = {VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
    ci.surface = v->surface;
    ci.minImageCount = count;
    ci.imageFormat = fmt.format;
    ci.imageColorSpace = fmt.colorSpace;
    ci.imageExtent = e;
    ci.imageArrayLayers = 1;
    ci.imageUsage = VK_IMAGE_USAGE_TRANSFER_DST_BIT;
    ci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE;
    ci.preTransform = caps.currentTransform;
    ci.compositeAlpha = alpha;
    ci.presentMode = VK_PRESENT_MODE_FIFO_KHR;
    ci.clipped = VK_TRUE;
    if (vkCreateSwapchainKHR(v->device, &ci, NULL, &w->swapchain) != VK_SUCCESS)
        return fprintf(stderr, "neural-texture: vkCreateSwapchainKHR failed\n"), 1;
    w->nimages = MAX_IMAGES;
    if (vkGetSwapchainImagesKHR(v->device, w->swapchain, &w->nimages, w->images) < 0)
        return fprintf(stderr, "neural-texture: vkGetSwapchainImagesKHR failed\n"), 1;
    VkSemaphoreCreateInfo si = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    for (uint32_t i = 0; i < w->nimages; i++)
        if (vkCreateSemaphore(v->device, &si, NULL, &w->done[i]) != VK_SUCCESS)
            return fprintf(stderr, "neural-texture: vkCreateSemaphore failed\n"), 1;
    return 0;
}

int nt_window_swapchain(nt_window *w, vkx *v) {
    VkSemaphoreCreateInfo si = {VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = v->pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    if (vkCreateSemaphore(v->device, &si, NULL, &w->acquired) != VK_SUCCESS ||
        vkCreateFence(v->device, &fi, NULL, &w->fence) != VK_SUCCESS ||
        vkAllocateCommandBuffers(v->device, &ai, &w->cb) != VK_SUCCESS)
        return fprintf(stderr, "neural-texture: window semaphore / fence / command buffer creation failed\n"), 1;
    return make_swapchain(w, v);
}

static int make_staging(nt_window *w, vkx *v, int size) {
    if (w->staging && w->staging_size == size) return 0;
    if (w->staging) vkDestroyImage(v->device, w->staging, NULL), vkFreeMemory(v->device, w->staging_mem, NULL);
    w->staging = VK_NULL_HANDLE, w->staging_mem = VK_NULL_HANDLE;
    VkImageCreateInfo ii = {VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ii.imageType = VK_IMAGE_TYPE_2D;
    ii.format = VK_FORMAT_R8G8B8A8_UNORM;
    ii.extent = (VkExtent3D){2 * (uint32_t)size, (uint32_t)size, 1};
    ii.mipLevels = ii.arrayLayers = 1;
    ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = VK_IMAGE_USAGE_TRANSFER_DST_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    if (vkCreateImage(v->device, &ii, NULL, &w->staging) != VK_SUCCESS || vkx_image_memory(v, w->staging, &w->staging_mem))
        return fprintf(stderr, "neural-texture: the window's staging image cannot be created\n"), 1;
    w->staging_size = size;
    return 0;
}

static void image_barrier(VkCommandBuffer cb, VkImage img, VkPipelineStageFlags src, VkAccessFlags sa,
                          VkPipelineStageFlags dst, VkAccessFlags da, VkImageLayout from, VkImageLayout to) {
    VkImageMemoryBarrier b = {VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    b.srcAccessMask = sa, b.dstAccessMask = da;
    b.oldLayout = from, b.newLayout = to;
    b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
    b.image = img;
    b.subresourceRange = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    vkCmdPipelineBarrier(cb, src, dst, 0, 0, NULL, 0, NULL, 1, &b);
}

static int record(nt_window *w, vkx *v, uint32_t idx, const vkx_buffer *left, const vkx_buffer *right, int size) {
    (void)v;
    VkCommandBuffer cb = w->cb;
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (vkResetCommandBuffer(cb, 0) != VK_SUCCESS || vkBeginCommandBuffer(cb, &bi) != VK_SUCCESS) return 1;
    const VkImageLayout dst = VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, src = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    /* the buffers' writers (earlier submits: a copy, compute shaders) before our reads */
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL,
                          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT};
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    /* the last frame's blit has read the staging image; the swapchain image
     * is ours once the acquire semaphore (waited at the transfer stage) is */
    image_barrier(cb, w->staging, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_IMAGE_LAYOUT_UNDEFINED, dst);
    image_barrier(cb, w->images[idx], VK_PIPELINE_STAGE_TRANSFER_BIT, 0, VK_PIPELINE_STAGE_TRANSFER_BIT,
                  VK_ACCESS_TRANSFER_WRITE_BIT, VK_IMAGE_LAYOUT_UNDEFINED, dst);
    VkBufferImageCopy region = {0};
    region.imageSubresource = (VkImageSubresourceLayers){VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = (VkExtent3D){(uint32_t)size, (uint32_t)size, 1};
    vkCmdCopyBufferToImage(cb, left->buf, w->staging, dst, 1, &region);
    region.imageOffset.x = size;
    vkCmdCopyBufferToImage(cb, right->buf, w->staging, dst, 1, &region);
    image_barrier(cb, w->staging, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT, dst, src);
    VkImageBlit blit = {0};
    blit.srcSubresource = blit.dstSubresource = region.imageSubresource;
    blit.srcOffsets[1] = (VkOffset3D){2 * size, size, 1};
    blit.dstOffsets[1] = (VkOffset3D){(int32_t)w->extent.width, (int32_t)w->extent.height, 1};
    vkCmdBlitImage(cb, w->staging, src, w->images[idx], dst, 1, &blit, VK_FILTER_NEAREST);
    image_barrier(cb, w->images[idx], VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                  VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, dst, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
    return vkEndCommandBuffer(cb) != VK_SUCCESS;
}

int nt_window_present(nt_window *w, vkx *v, const vkx_buffer *left, const vkx_buffer *right, int size) {
    glfwPollEvents();
    if (glfwWindowShouldClose(w->win)) return 2;
    if (!w->swapchain && make_swapchain(w, v)) return 1;
    if (!w->swapchain) return 0; /* minimised */
    if (make_staging(w, v, size)) return 1;
    uint32_t idx = 0;
    VkResult r = vkAcquireNextImageKHR(v->device, w->swapchain, UINT64_MAX, w->acquired, VK_NULL_HANDLE, &idx);
    if (r == VK_ERROR_OUT_OF_DATE_KHR) return make_swapchain(w, v);
    if (r != VK_SUCCESS && r != VK_SUBOPTIMAL_KHR)
        return fprintf(stderr, "neural-texture: vkAcquireNextImageKHR: VkResult %d\n", (int)r), 1;
    if (record(w, v, idx, left, right, size)) return fprintf(stderr, "neural-texture: recording the present failed\n"), 1;
    VkPipelineStageFlags wait_stage = VK_PIPELINE_STAGE_TRANSFER_BIT;
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.waitSemaphoreCount = 1;
    si.pWaitSemaphores = &w->acquired;
    si.pWaitDstStageMask = &wait_stage;
    si.commandBufferCount = 1;
    si.pCommandBuffers = &w->cb;
    si.signalSemaphoreCount = 1;
    si.pSignalSemaphores = &w->done[idx];
    if (vkQueueSubmit(v->queue, 1, &si, w->fence) != VK_SUCCESS ||
        vkWaitForFences(v->device, 1, &w->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS ||
        vkResetFences(v->device, 1, &w->fence) != VK_SUCCESS)
        return fprintf(stderr, "neural-texture: the present's submit failed\n"), 1;
    VkPresentInfoKHR pi = {VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
    pi.waitSemaphoreCount = 1;
    pi.pWaitSemaphores = &w->done[idx];
    pi.swapchainCount = 1;
    pi.pSwapchains = &w->swapchain;
    pi.pImageIndices = &idx;
    r = vkQueuePresentKHR(v->queue, &pi);
    if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR) return make_swapchain(w, v);
    if (r != VK_SUCCESS) return fprintf(stderr, "neural-texture: vkQueuePresentKHR: VkResult %d\n", (int)r), 1;
    return 0;
}

void nt_window_close(nt_window *w, vkx *v) {
    if (!w) {
        glfwTerminate();
        return;
    }
    if (v->device) {
        vkDeviceWaitIdle(v->device);
        destroy_swapchain(w, v);
        if (w->staging) vkDestroyImage(v->device, w->staging, NULL);
        if (w->staging_mem) vkFreeMemory(v->device, w->staging_mem, NULL);
        if (w->cb) vkFreeCommandBuffers(v->device, v->pool, 1, &w->cb);
        if (w->fence) vkDestroyFence(v->device, w->fence, NULL);
        if (w->acquired) vkDestroySemaphore(v->device, w->acquired, NULL);
    }
    if (v->surface) vkDestroySurfaceKHR(v->instance, v->surface, NULL);
    v->surface = VK_NULL_HANDLE;
    if (w->win) glfwDestroyWindow(w->win);
    free(w);
    glfwTerminate();
}

#endif
