/* backends/vulkan/pipeline.c — compute pipelines from the embedded SPIR-V
 * (generated/vulkan_shaders.c, one module per line of shaders/variants.txt):
 * one VkShaderModule per variant and one VkPipeline per (variant, work-group
 * size), created on first use and kept until the backend goes; ONE
 * descriptor-set layout (bindings 0..LOOM__VK_MAX_BIND-1, storage buffers,
 * then LOOM__VK_MAX_TEXEL uniform texel buffers where vk->texel) and ONE
 * pipeline layout (that set + a 128-byte push-constant range) for
 * every shader. The work-group size is specialization constant 0.
 *
 * Before a module is used its SPIR-V capabilities are checked against the
 * features the device enabled, so a device without 16-bit storage rejects an
 * f16/bf16 plan with a message instead of failing in the driver.
 *
 * Pipeline cache: directory LOOM_VULKAN_CACHE ("off" disables it), else
 * $XDG_CACHE_HOME/loom/vulkan, else ~/.cache/loom/vulkan; one file per device
 * named <vendor>-<device>-<pipelineCacheUUID>.bin. Its header is checked
 * against the device before use (a mismatch starts empty); it is written at
 * destroy, only when new pipelines were made, to a temporary name and renamed
 * (concurrent processes never see half a file). A cache that cannot be
 * written is a logged warning: it only costs time. */
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vulkan.h"

void loom__vk_cache_dir(char *out, size_t n) { loom__cache_dir("LOOM_VULKAN_CACHE", "vulkan", out, n); }

/* the cache data belongs to this device (VkPipelineCacheHeaderVersionOne) */
static bool header_ok(const loom__vk *vk, const unsigned char *d, size_t n) {
    uint32_t w[4];
    if (n < 32) return false;
    memcpy(w, d, sizeof w);
    return w[0] >= 32 && w[0] <= n && w[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && w[2] == vk->props.vendorID &&
           w[3] == vk->props.deviceID && !memcmp(d + 16, vk->props.pipelineCacheUUID, VK_UUID_SIZE);
}

loom_status loom__vk_layouts_create(loom__vk *vk) {
    VkDescriptorSetLayoutBinding b[LOOM__VK_MAX_BIND + LOOM__VK_MAX_TEXEL];
    int nb = LOOM__VK_MAX_BIND + (vk->texel ? LOOM__VK_MAX_TEXEL : 0);
    for (int i = 0; i < nb; i++)
        b[i] = (VkDescriptorSetLayoutBinding){(uint32_t)i,
                                              i < LOOM__VK_MAX_BIND ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                                    : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
                                              1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo di = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    di.bindingCount = (uint32_t)nb;
    di.pBindings = b;
    LOOM_VK_CHECK(vk, VKF(vkCreateDescriptorSetLayout)(vk->device, &di, NULL, &vk->set_layout));
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, LOOM__VK_PUSH_BYTES};
    VkPipelineLayoutCreateInfo li = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    li.setLayoutCount = 1;
    li.pSetLayouts = &vk->set_layout;
    li.pushConstantRangeCount = 1;
    li.pPushConstantRanges = &pr;
    LOOM_VK_CHECK(vk, VKF(vkCreatePipelineLayout)(vk->device, &li, NULL, &vk->layout));

    vk->modules = calloc((size_t)loom__vk_shader_count + 1, sizeof *vk->modules);
    vk->pipes = calloc((size_t)loom__vk_shader_count + 1, sizeof *vk->pipes);
    if (!vk->modules || !vk->pipes) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");

    /* the pipeline cache, seeded from disk when the file fits this device */
    char dir[512];
    loom__vk_cache_dir(dir, sizeof dir);
    unsigned char *data = NULL;
    size_t n = 0;
    if (*dir) {
        char uuid[2 * VK_UUID_SIZE + 1];
        for (int i = 0; i < (int)VK_UUID_SIZE; i++) snprintf(uuid + 2 * i, 3, "%02x", vk->props.pipelineCacheUUID[i]);
        snprintf(vk->cache_path, sizeof vk->cache_path, "%s/%04x-%04x-%s.bin", dir, vk->props.vendorID,
                 vk->props.deviceID, uuid);
        data = loom__read_file(vk->cache_path, &n);
        if (data && !header_ok(vk, data, n)) {
            loom__log(vk->ctx, LOOM_LOG_INFO, "vulkan: pipeline cache %s does not match the device; starting empty",
                      vk->cache_path);
            free(data);
            data = NULL, n = 0;
        }
    }
    VkPipelineCacheCreateInfo ci = {VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = data ? n : 0;
    ci.pInitialData = data;
    VkResult r = VKF(vkCreatePipelineCache)(vk->device, &ci, NULL, &vk->cache);
    if (r != VK_SUCCESS && data) { /* rejected: start empty */
        ci.initialDataSize = 0, ci.pInitialData = NULL;
        r = VKF(vkCreatePipelineCache)(vk->device, &ci, NULL, &vk->cache);
    }
    free(data);
    if (r != VK_SUCCESS) return loom__vk_fail(vk, r, "vkCreatePipelineCache", __FILE__, __LINE__);
    return LOOM_OK;
}

static void write_cache(loom__vk *vk) {
    if (!vk->cache || !vk->cache_dirty || !vk->cache_path[0]) return;
    size_t n = 0;
    if (VKF(vkGetPipelineCacheData)(vk->device, vk->cache, &n, NULL) != VK_SUCCESS || !n) return;
    unsigned char *d = malloc(n);
    if (!d) return;
    char dir[512], tmp[640];
    loom__vk_cache_dir(dir, sizeof dir);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", vk->cache_path, (long)getpid());
    bool ok = VKF(vkGetPipelineCacheData)(vk->device, vk->cache, &n, d) == VK_SUCCESS && loom__mkdirs(dir);
    FILE *f = ok ? fopen(tmp, "wb") : NULL;
    ok = f && fwrite(d, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = false;
    if (ok && rename(tmp, vk->cache_path) != 0) ok = false;
    if (!ok) {
        remove(tmp);
        loom__log(vk->ctx, LOOM_LOG_WARN, "vulkan: cannot write the pipeline cache %s (%s); pipelines will be rebuilt next time",
                  vk->cache_path, strerror(errno));
    }
    free(d);
}

void loom__vk_pipelines_destroy(loom__vk *vk) {
    write_cache(vk);
    for (int i = 0; vk->pipes && i < loom__vk_shader_count; i++)
        for (int k = 0; k < LOOM__VK_NLOCAL; k++)
            if (vk->pipes[i][k]) VKF(vkDestroyPipeline)(vk->device, vk->pipes[i][k], NULL);
    for (int i = 0; vk->modules && i < loom__vk_shader_count; i++)
        if (vk->modules[i]) VKF(vkDestroyShaderModule)(vk->device, vk->modules[i], NULL);
    free(vk->pipes), free(vk->modules);
    vk->pipes = NULL, vk->modules = NULL;
    if (vk->cache) VKF(vkDestroyPipelineCache)(vk->device, vk->cache, NULL);
    if (vk->layout) VKF(vkDestroyPipelineLayout)(vk->device, vk->layout, NULL);
    if (vk->set_layout) VKF(vkDestroyDescriptorSetLayout)(vk->device, vk->set_layout, NULL);
    vk->cache = VK_NULL_HANDLE, vk->layout = VK_NULL_HANDLE, vk->set_layout = VK_NULL_HANDLE;
}

int loom__vk_shader_find(const char *name) {
    for (int i = 0; i < loom__vk_shader_count; i++)
        if (!strcmp(loom__vk_shaders[i].name, name)) return i;
    return -1;
}

/* The SPIR-V capabilities that need a device feature: NULL if all present,
 * else the feature's name. */
static const char *missing_feature(const loom__vk *vk, const loom__vk_shader *s) {
    for (size_t i = 5; i < s->count;) {
        uint32_t op = s->words[i] & 0xffffu, len = s->words[i] >> 16;
        if (len == 0 || op == 14 /* OpMemoryModel: capabilities are over */) break;
        if (op == 17 /* OpCapability */ && i + 1 < s->count) {
            switch (s->words[i + 1]) {
            case 9: if (!vk->float16) return "shaderFloat16"; break;
            case 10: if (!vk->float64) return "shaderFloat64"; break;
            case 11: if (!vk->int64) return "shaderInt64"; break;
            case 22: if (!vk->int16) return "shaderInt16"; break;
            case 39: if (!vk->int8) return "shaderInt8"; break;
            case 4433: if (!vk->storage16) return "storageBuffer16BitAccess"; break;
            case 4448: if (!vk->storage8) return "storageBuffer8BitAccess"; break;
            case 4434: case 4435: case 4449: case 4450: return "16/8-bit uniform or push-constant access";
            default: break;
            }
        }
        i += len;
    }
    return NULL;
}

loom_status loom__vk_pipeline(loom__vk *vk, int index, uint32_t local, VkPipeline *out) {
    LOOM__ASSERT(index >= 0 && index < loom__vk_shader_count);
    int lg = 0;
    while ((1u << lg) < local) lg++;
    LOOM__ASSERT((1u << lg) == local && local <= vk->max_local);
    if (vk->pipes[index][lg]) {
        *out = vk->pipes[index][lg];
        return LOOM_OK;
    }
    const loom__vk_shader *s = &loom__vk_shaders[index];
    if (!vk->modules[index]) {
        const char *miss = missing_feature(vk, s);
        if (miss)
            return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: shader '%s' needs %s, which device '%s' lacks",
                             s->name, miss, vk->props.deviceName);
        VkShaderModuleCreateInfo mi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
        mi.codeSize = s->count * 4;
        mi.pCode = s->words;
        LOOM_VK_CHECK(vk, VKF(vkCreateShaderModule)(vk->device, &mi, NULL, &vk->modules[index]));
    }
    double t0 = loom__now_s();
    VkSpecializationMapEntry me = {0, 0, sizeof(uint32_t)};
    VkSpecializationInfo si = {1, &me, sizeof local, &local};
    VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = vk->modules[index];
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = &si;
    ci.layout = vk->layout;
    VkResult r = VKF(vkCreateComputePipelines)(vk->device, vk->cache, 1, &ci, NULL, &vk->pipes[index][lg]);
    if (r != VK_SUCCESS) {
        vk->pipes[index][lg] = VK_NULL_HANDLE;
        loom__vk_fail(vk, r, "vkCreateComputePipelines", __FILE__, __LINE__);
        return loom__err(vk->ctx, loom_last_status(vk->ctx), "vulkan: creating the pipeline for shader '%s' (work-group %u): %s",
                         s->name, local, loom_last_error(vk->ctx));
    }
    vk->cache_dirty = true;
    vk->n_pipelines++;
    vk->pipeline_seconds += loom__now_s() - t0;
    *out = vk->pipes[index][lg];
    return LOOM_OK;
}
