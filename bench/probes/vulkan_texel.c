/* bench/probes/vulkan_texel.c — does lavapipe load GEMM operands faster from
 * uniform texel buffers than from storage buffers? A standalone Vulkan
 * program (not linked with loom): the same register-blocked GEMM
 * (bench/probes/vulkan_texel.comp) reading A and B through storage buffers
 * (vec4 loads, as shaders/gemm_wide.comp) or through R32G32B32A32_SFLOAT
 * uniform texel buffers, best of 6 submits each, checked against a double
 * reference on 16 entries. Build and run: bench/probes/vulkan_texel.sh.
 * Results: bench/results/2026-12-05-vulkan-texel-gemm-probe.md. */
#define _GNU_SOURCE
#include <vulkan/vulkan.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define CK(x) do { VkResult r_ = (x); if (r_ != VK_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, r_); exit(1); } } while (0)
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static VkDevice dev; static VkPhysicalDevice pd;
static uint32_t memtype(uint32_t bits, VkMemoryPropertyFlags f) {
    VkPhysicalDeviceMemoryProperties mp; vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++) if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & f) == f) return i;
    exit(2);
}
static VkBuffer mkbuf(size_t sz, void **map) {
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = sz,
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT};
    VkBuffer b; CK(vkCreateBuffer(dev, &bi, NULL, &b));
    VkMemoryRequirements mr; vkGetBufferMemoryRequirements(dev, b, &mr);
    VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, .allocationSize = mr.size,
        .memoryTypeIndex = memtype(mr.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)};
    VkDeviceMemory m; CK(vkAllocateMemory(dev, &ai, NULL, &m)); CK(vkBindBufferMemory(dev, b, m, 0));
    CK(vkMapMemory(dev, m, 0, sz, 0, map)); return b;
}
static void *readf(const char *p, size_t *n) { FILE *f = fopen(p, "rb"); if (!f) { perror(p); exit(2); } fseek(f, 0, SEEK_END); *n = ftell(f); rewind(f); void *b = malloc(*n); fread(b, 1, *n, f); fclose(f); return b; }
int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s N ssbo.spv texel.spv\n", argv[0]);
        return 2;
    }
    uint32_t n = (uint32_t)atoi(argv[1]);
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO, .apiVersion = VK_API_VERSION_1_1};
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
    VkInstance inst; CK(vkCreateInstance(&ici, NULL, &inst));
    uint32_t np = 1; CK(vkEnumeratePhysicalDevices(inst, &np, &pd) < 0 ? VK_ERROR_UNKNOWN : VK_SUCCESS);
    VkPhysicalDeviceProperties pp; vkGetPhysicalDeviceProperties(pd, &pp);
    printf("%s maxTexelBufferElements %u maxUniformBufferRange %u minTexelBufferOffsetAlignment %llu\n", pp.deviceName,
           pp.limits.maxTexelBufferElements, pp.limits.maxUniformBufferRange, (unsigned long long)pp.limits.minTexelBufferOffsetAlignment);
    float prio = 1; VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, .queueCount = 1, .pQueuePriorities = &prio};
    VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
    CK(vkCreateDevice(pd, &dci, NULL, &dev)); VkQueue q; vkGetDeviceQueue(dev, 0, 0, &q);
    size_t sz = (size_t)n * n * 4; float *a, *b, *c;
    VkBuffer A = mkbuf(sz, (void **)&a), B = mkbuf(sz, (void **)&b), C = mkbuf(sz, (void **)&c);
    for (size_t i = 0; i < (size_t)n * n; i++) a[i] = (float)(i % 7) - 3, b[i] = (float)(i % 5) - 2;
    VkBufferView va, vb;
    VkBufferViewCreateInfo vci = {VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO, .buffer = A, .format = VK_FORMAT_R32G32B32A32_SFLOAT, .range = VK_WHOLE_SIZE};
    CK(vkCreateBufferView(dev, &vci, NULL, &va)); vci.buffer = B; CK(vkCreateBufferView(dev, &vci, NULL, &vb));
    VkCommandPoolCreateInfo cpi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO}; VkCommandPool cp; CK(vkCreateCommandPool(dev, &cpi, NULL, &cp));
    for (int texel = 0; texel < 2; texel++) {
        VkDescriptorType t01 = texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        VkDescriptorSetLayoutBinding bd[3] = {{0, t01, 1, VK_SHADER_STAGE_COMPUTE_BIT}, {1, t01, 1, VK_SHADER_STAGE_COMPUTE_BIT},
                                              {2, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT}};
        VkDescriptorSetLayoutCreateInfo li = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, .bindingCount = 3, .pBindings = bd};
        VkDescriptorSetLayout dl; CK(vkCreateDescriptorSetLayout(dev, &li, NULL, &dl));
        VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 4};
        VkPipelineLayoutCreateInfo pli = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO, .setLayoutCount = 1, .pSetLayouts = &dl, .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
        VkPipelineLayout pl; CK(vkCreatePipelineLayout(dev, &pli, NULL, &pl));
        size_t cs; void *code = readf(texel ? argv[3] : argv[2], &cs);
        VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, .codeSize = cs, .pCode = code};
        VkShaderModule sm; CK(vkCreateShaderModule(dev, &smi, NULL, &sm));
        VkComputePipelineCreateInfo cpci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO, .stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = sm, .pName = "main"}, .layout = pl};
        VkPipeline pipe; CK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci, NULL, &pipe));
        VkDescriptorPoolSize ps[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3}, {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, 2}};
        VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, .maxSets = 1, .poolSizeCount = 2, .pPoolSizes = ps};
        VkDescriptorPool dp; CK(vkCreateDescriptorPool(dev, &dpi, NULL, &dp));
        VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, .descriptorPool = dp, .descriptorSetCount = 1, .pSetLayouts = &dl};
        VkDescriptorSet ds; CK(vkAllocateDescriptorSets(dev, &dai, &ds));
        VkDescriptorBufferInfo bia = {A, 0, VK_WHOLE_SIZE}, bib = {B, 0, VK_WHOLE_SIZE}, bic = {C, 0, VK_WHOLE_SIZE};
        VkWriteDescriptorSet w[3] = {
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = ds, .dstBinding = 0, .descriptorCount = 1, .descriptorType = t01, .pBufferInfo = &bia, .pTexelBufferView = &va},
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = ds, .dstBinding = 1, .descriptorCount = 1, .descriptorType = t01, .pBufferInfo = &bib, .pTexelBufferView = &vb},
            {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET, .dstSet = ds, .dstBinding = 2, .descriptorCount = 1, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .pBufferInfo = &bic}};
        if (texel) w[0].pBufferInfo = w[1].pBufferInfo = NULL; else w[0].pTexelBufferView = w[1].pTexelBufferView = NULL;
        vkUpdateDescriptorSets(dev, 3, w, 0, NULL);
        VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, .commandPool = cp, .commandBufferCount = 1};
        VkCommandBuffer cb; CK(vkAllocateCommandBuffers(dev, &cai, &cb));
        VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
        CK(vkBeginCommandBuffer(cb, &bi));
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipe);
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pl, 0, 1, &ds, 0, NULL);
        vkCmdPushConstants(cb, pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &n);
        vkCmdDispatch(cb, n / RMH, n / (8 * RNH), 1);
        CK(vkEndCommandBuffer(cb));
        VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO}; VkFence fe; CK(vkCreateFence(dev, &fci, NULL, &fe));
        double best = 1e9;
        for (int r = 0; r < 6; r++) {
            memset(c, 0, sz);
            VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
            double t0 = now(); CK(vkQueueSubmit(q, 1, &si, fe)); CK(vkWaitForFences(dev, 1, &fe, 1, ~0ull)); double t = now() - t0;
            CK(vkResetFences(dev, 1, &fe)); if (t < best) best = t;
        }
        /* check a few entries */
        double err = 0;
        for (int s = 0; s < 16; s++) { uint32_t i = (s * 977u) % n, j = (s * 331u) % n; double ref = 0;
            for (uint32_t k = 0; k < n; k++) ref += (double)a[i * n + k] * b[k * n + j];
            double e = ref - c[i * n + j]; if (e < 0) e = -e; if (e > err) err = e; }
        printf("%s n=%u: %.2f ms, %.1f GFLOP/s, max abs err %.3g\n", texel ? "texel" : "ssbo ", n, best * 1e3, 2.0 * n * n * n / best * 1e-9, err);
    }
    return 0;
}
