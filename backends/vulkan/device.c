/* backends/vulkan/device.c — the Vulkan loader (libvulkan opened with dlopen,
 * so a library built with Vulkan still runs where it is absent), instance and
 * device creation, physical-device selection, capabilities, the validation
 * layer and its messenger, available() / is_gpu() / describe(), and the error
 * names used by LOOM_VK_CHECK.
 *
 * Device selection: index from desc->device (> 0), else the environment
 * variable LOOM_VULKAN_DEVICE, else the first discrete GPU, else the first
 * integrated GPU, else device 0 (vkEnumeratePhysicalDevices order). An index
 * that names no device is an error listing the devices there are.
 *
 * Validation: LOOM_VULKAN_VALIDATION=1 enables VK_LAYER_KHRONOS_validation
 * (core checks + synchronization validation) and a VK_EXT_debug_utils
 * messenger. Every warning or error message is recorded; the loom call in
 * progress returns LOOM_ERR_BACKEND "vulkan validation: <message>"
 * (loom__vk_validated). Messages during loom_backend_destroy cannot be
 * returned: they go to stderr. A missing layer is an error naming the
 * package.
 *
 * Adoption (loom__vk_adopt, for loom_vulkan_backend_create): the same
 * capabilities and loom-owned objects (command pool, fence, memory, layouts)
 * on the application's instance, device and queue, which loom__vk_close then
 * leaves alone; features are what the device has, limited to what the
 * application says it enabled; no validation messenger of loom's own. */
#ifdef LOOM_PIN_DRIVERS
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NODELETE */
#include <link.h>
#endif
#include <dlfcn.h>
#include <pthread.h>

#include "vulkan.h"

/* ---- the loader ---- */
static struct {
    void *lib;
    PFN_vkGetInstanceProcAddr gipa;
#define LOOM__VK_FN_MEMBER(n) PFN_##n n;
    LOOM__VK_GLOBAL_FNS(LOOM__VK_FN_MEMBER)
#undef LOOM__VK_FN_MEMBER
} loader;
static pthread_once_t loader_once = PTHREAD_ONCE_INIT;

static void load_loader(void) {
    const char *names[] = {"libvulkan.so.1", "libvulkan.so"};
    for (int i = 0; i < 2 && !loader.lib; i++) loader.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!loader.lib) return;
    loader.gipa = (PFN_vkGetInstanceProcAddr)dlsym(loader.lib, "vkGetInstanceProcAddr");
    if (!loader.gipa) return;
#define LOAD(n) loader.n = (PFN_##n)loader.gipa(NULL, #n);
    LOOM__VK_GLOBAL_FNS(LOAD)
#undef LOAD
}

static bool have_loader(void) {
    pthread_once(&loader_once, load_loader);
    return loader.gipa && loader.vkCreateInstance && loader.vkEnumerateInstanceLayerProperties &&
           loader.vkEnumerateInstanceExtensionProperties;
}

const char *loom__vk_errstr(VkResult r) {
    switch (r) {
#define E(x) \
    case x: return #x;
        E(VK_SUCCESS) E(VK_NOT_READY) E(VK_TIMEOUT) E(VK_INCOMPLETE) E(VK_ERROR_OUT_OF_HOST_MEMORY)
        E(VK_ERROR_OUT_OF_DEVICE_MEMORY) E(VK_ERROR_INITIALIZATION_FAILED) E(VK_ERROR_DEVICE_LOST)
        E(VK_ERROR_MEMORY_MAP_FAILED) E(VK_ERROR_LAYER_NOT_PRESENT) E(VK_ERROR_EXTENSION_NOT_PRESENT)
        E(VK_ERROR_FEATURE_NOT_PRESENT) E(VK_ERROR_INCOMPATIBLE_DRIVER) E(VK_ERROR_TOO_MANY_OBJECTS)
        E(VK_ERROR_FORMAT_NOT_SUPPORTED) E(VK_ERROR_FRAGMENTED_POOL) E(VK_ERROR_UNKNOWN)
        E(VK_ERROR_OUT_OF_POOL_MEMORY) E(VK_ERROR_INVALID_EXTERNAL_HANDLE) E(VK_ERROR_FRAGMENTATION)
        E(VK_PIPELINE_COMPILE_REQUIRED)
#undef E
    default: return "unknown VkResult";
    }
}

loom_status loom__vk_fail(loom__vk *vk, VkResult r, const char *call, const char *file, int line) {
    loom_status st = (r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_OUT_OF_DEVICE_MEMORY) ? LOOM_ERR_OOM
                                                                                              : LOOM_ERR_BACKEND;
    loom__err(vk->ctx, st, "vulkan: %s failed: %s (%d) at %s:%d", call, loom__vk_errstr(r), (int)r, file, line);
    /* a validation message explaining the failure is the more useful text */
    if (vk->validation && vk->vmsg_count > vk->vmsg_seen) return loom__vk_validated(vk, LOOM_OK);
    return st;
}

loom_status loom__vk_validated(loom__vk *vk, loom_status st) {
    if (!vk || vk->vmsg_count == vk->vmsg_seen) return st;
    int n = vk->vmsg_count - vk->vmsg_seen;
    vk->vmsg_seen = vk->vmsg_count;
    if (st != LOOM_OK) return st;
    return loom__err(vk->ctx, LOOM_ERR_BACKEND, "vulkan validation: %s%s", vk->vmsg,
                     n > 1 ? " (and more messages)" : "");
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                  VkDebugUtilsMessageTypeFlagsEXT type,
                                                  const VkDebugUtilsMessengerCallbackDataEXT *d, void *user) {
    (void)type;
    loom__vk *vk = user;
    if (!(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)))
        return VK_FALSE;
    const char *msg = d && d->pMessage ? d->pMessage : "(no message)";
    if (vk->vmsg_count < 0) { /* closing: nobody to return it to */
        fprintf(stderr, "loom: vulkan validation (during destroy): %s\n", msg);
        return VK_FALSE;
    }
    if (vk->vmsg_count == vk->vmsg_seen) snprintf(vk->vmsg, sizeof vk->vmsg, "%s", msg);
    vk->vmsg_count++;
    return VK_FALSE;
}

static bool env_on(const char *name) {
    const char *e = getenv(name);
    return e && *e && strcmp(e, "0") != 0;
}

#ifdef LOOM_PIN_DRIVERS
/* Sanitizer builds (LOOM_PIN_DRIVERS): keep the Vulkan driver and layer
 * libraries loaded until exit. The loader unloads them when the instance is
 * destroyed, and LeakSanitizer then reports the driver's own never-freed
 * allocations (lavapipe, LLVM) as "<unknown module>", which no suppression
 * can name; pinned, they keep their names (tests/lsan.supp). */
static int pin_one(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size, (void)data;
    const char *n = info->dlpi_name;
    if (n && *n && (strstr(n, "libvulkan_") || strstr(n, "VkLayer_"))) (void)dlopen(n, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    return 0;
}
static void pin_drivers(void) { dl_iterate_phdr(pin_one, NULL); }
#endif

/* An instance; with validation when vk (not NULL) asks for it. */
static VkResult make_instance(loom__vk *vk, bool validation, VkInstance *out, char *why, size_t nwhy) {
    *out = VK_NULL_HANDLE;
    uint32_t api = VK_API_VERSION_1_0;
    if (loader.vkEnumerateInstanceVersion) loader.vkEnumerateInstanceVersion(&api);
    if (api < VK_API_VERSION_1_1) {
        snprintf(why, nwhy, "the Vulkan loader is version %u.%u; loom needs 1.2", VK_API_VERSION_MAJOR(api),
                 VK_API_VERSION_MINOR(api));
        return VK_ERROR_INCOMPATIBLE_DRIVER;
    }
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "loom";
    app.pEngineName = "loom";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT mi = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    VkValidationFeatureEnableEXT en[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    if (validation) {
        uint32_t n = 0;
        loader.vkEnumerateInstanceLayerProperties(&n, NULL);
        VkLayerProperties *lp = calloc(n ? n : 1, sizeof *lp);
        bool found = false;
        if (lp && loader.vkEnumerateInstanceLayerProperties(&n, lp) >= 0)
            for (uint32_t i = 0; i < n; i++) found |= strcmp(lp[i].layerName, layer) == 0;
        free(lp);
        if (!found) {
            snprintf(why, nwhy,
                     "LOOM_VULKAN_VALIDATION is set but the Khronos validation layer (VK_LAYER_KHRONOS_validation) "
                     "is not installed (Debian/Ubuntu: apt install vulkan-validationlayers)");
            return VK_ERROR_LAYER_NOT_PRESENT;
        }
        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mi.pfnUserCallback = on_message;
        mi.pUserData = vk;
        vf.enabledValidationFeatureCount = 1;
        vf.pEnabledValidationFeatures = en;
        vf.pNext = &mi;
        ci.pNext = &vf;
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = &layer;
        ci.enabledExtensionCount = 1;
        ci.ppEnabledExtensionNames = exts;
    }
    VkResult r = loader.vkCreateInstance(&ci, NULL, out);
    if (r != VK_SUCCESS) snprintf(why, nwhy, "vkCreateInstance failed: %s (%d)", loom__vk_errstr(r), (int)r);
#ifdef LOOM_PIN_DRIVERS
    if (r == VK_SUCCESS) pin_drivers();
#endif
    return r;
}

/* The physical devices of an instance (at most 16). */
typedef struct devlist {
    uint32_t n;
    VkPhysicalDevice dev[16];
    VkPhysicalDeviceProperties props[16];
} devlist;

static void list_devices(PFN_vkEnumeratePhysicalDevices en, PFN_vkGetPhysicalDeviceProperties gp, VkInstance inst,
                         devlist *l) {
    l->n = 16;
    if (en(inst, &l->n, l->dev) < 0) l->n = 0;
    for (uint32_t i = 0; i < l->n; i++) gp(l->dev[i], &l->props[i]);
}

static int default_device(const devlist *l) {
    for (uint32_t i = 0; i < l->n; i++)
        if (l->props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) return (int)i;
    for (uint32_t i = 0; i < l->n; i++)
        if (l->props[i].deviceType == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU) return (int)i;
    return 0;
}

static const char *type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
    }
}

/* Parse spec as an index into l; -1 (with msg) if it names no device. */
static int pick(const devlist *l, const char *spec, char *msg, size_t n) {
    char *end;
    long a = strtol(spec, &end, 10);
    if (end != spec && !*end && a >= 0 && a < (long)l->n) return (int)a;
    size_t at = (size_t)snprintf(msg, n, "device '%s' does not exist; there are %u:", spec, l->n);
    for (uint32_t i = 0; i < l->n && at < n; i++)
        at += (size_t)snprintf(msg + at, n - at, " %u %s (%s);", i, l->props[i].deviceName,
                               type_name(l->props[i].deviceType));
    return -1;
}

/* A throwaway instance for available() / is_gpu(): the devices, or why not. */
static bool probe(devlist *l, const char **why) {
    l->n = 0;
    if (!have_loader()) {
        if (why) *why = "no Vulkan loader (libvulkan.so.1 not found; Debian/Ubuntu: apt install libvulkan1)";
        return false;
    }
    VkInstance inst;
    char msg[256];
    if (make_instance(NULL, false, &inst, msg, sizeof msg) != VK_SUCCESS) {
        if (why) *why = "no usable Vulkan instance (vkCreateInstance failed, or the loader is older than 1.1)";
        return false;
    }
    PFN_vkEnumeratePhysicalDevices en = (PFN_vkEnumeratePhysicalDevices)loader.gipa(inst, "vkEnumeratePhysicalDevices");
    PFN_vkGetPhysicalDeviceProperties gp =
        (PFN_vkGetPhysicalDeviceProperties)loader.gipa(inst, "vkGetPhysicalDeviceProperties");
    PFN_vkDestroyInstance di = (PFN_vkDestroyInstance)loader.gipa(inst, "vkDestroyInstance");
    if (en && gp) list_devices(en, gp, inst, l);
    if (di) di(inst, NULL);
    if (l->n == 0) {
        if (why) *why = "no Vulkan device (vkEnumeratePhysicalDevices found none; install a driver, e.g. mesa-vulkan-drivers)";
        return false;
    }
    return true;
}

bool loom__vk_available(loom_ctx *ctx, const char **why) {
    (void)ctx;
    devlist l;
    if (!probe(&l, why)) return false;
    if (why) *why = "Vulkan device found";
    return true;
}

bool loom__vk_is_gpu(loom_ctx *ctx) {
    (void)ctx;
    devlist l;
    if (!probe(&l, NULL)) return false;
    const char *env = getenv("LOOM_VULKAN_DEVICE");
    char msg[512];
    int i = env && *env ? pick(&l, env, msg, sizeof msg) : default_device(&l);
    return i >= 0 && l.props[i].deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
}

static bool has_ext(const VkExtensionProperties *e, uint32_t n, const char *name) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(e[i].extensionName, name)) return true;
    return false;
}

/* The features the shaders may use that the device has, and extensions. */
static loom_status query_features(loom__vk *vk) {
    VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features f11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &f12};
    VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f11};
    VKF(vkGetPhysicalDeviceFeatures2)(vk->phys, &f2);
    vk->storage16 = f11.storageBuffer16BitAccess;
    vk->storage8 = f12.storageBuffer8BitAccess;
    vk->float16 = f12.shaderFloat16;
    vk->int8 = f12.shaderInt8;
    vk->int16 = f2.features.shaderInt16;
    vk->int64 = f2.features.shaderInt64;
    vk->float64 = f2.features.shaderFloat64; /* augment_u8's RandomAffine */
    uint32_t ne = 0;
    VKF(vkEnumerateDeviceExtensionProperties)(vk->phys, NULL, &ne, NULL);
    VkExtensionProperties *ext = calloc(ne ? ne : 1, sizeof *ext);
    if (!ext) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    VKF(vkEnumerateDeviceExtensionProperties)(vk->phys, NULL, &ne, ext);
    vk->coopmat = has_ext(ext, ne, "VK_KHR_cooperative_matrix");
    free(ext);
    return LOOM_OK;
}

static loom_status load_device_fns(loom__vk *vk) {
    bool ok = true;
#define LOAD(n) ok &= (vk->fn.n = (PFN_##n)VKF(vkGetDeviceProcAddr)(vk->device, #n)) != NULL;
    LOOM__VK_DEVICE_FNS(LOAD)
#undef LOAD
    if (!ok) {
        /* vkDestroyDevice may be the missing one: leave the device to the instance */
        vk->device = VK_NULL_HANDLE;
        return loom__err(vk->ctx, LOOM_ERR_BACKEND, "vulkan: the driver lacks a Vulkan 1.2 core device function");
    }
    return LOOM_OK;
}

/* Device features: query, then enable what the shaders may use, if present. */
static loom_status create_device(loom__vk *vk) {
    loom_status st = query_features(vk);
    if (st != LOOM_OK) return st;

    VkPhysicalDeviceVulkan12Features e12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features e11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, &e12};
    VkPhysicalDeviceFeatures2 e2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &e11};
    e11.storageBuffer16BitAccess = vk->storage16;
    e12.storageBuffer8BitAccess = vk->storage8;
    e12.shaderFloat16 = vk->float16;
    e12.shaderInt8 = vk->int8;
    e2.features.shaderInt16 = vk->int16;
    e2.features.shaderInt64 = vk->int64;
    e2.features.shaderFloat64 = vk->float64;

    uint32_t nq = 0;
    VKF(vkGetPhysicalDeviceQueueFamilyProperties)(vk->phys, &nq, NULL);
    VkQueueFamilyProperties qp[16];
    if (nq > 16) nq = 16;
    VKF(vkGetPhysicalDeviceQueueFamilyProperties)(vk->phys, &nq, qp);
    uint32_t qf = UINT32_MAX;
    for (uint32_t i = 0; i < nq && qf == UINT32_MAX; i++)
        if (qp[i].queueFlags & VK_QUEUE_COMPUTE_BIT) qf = i;
    if (qf == UINT32_MAX)
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: device '%s' has no compute queue", vk->props.deviceName);
    vk->queue_family = qf;
    vk->timestamp_bits = qp[qf].timestampValidBits;

    float prio = 1.0f;
    VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = qf;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    VkDeviceCreateInfo di = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &e2};
    di.queueCreateInfoCount = 1;
    di.pQueueCreateInfos = &qi;
    LOOM_VK_CHECK(vk, VKF(vkCreateDevice)(vk->phys, &di, NULL, &vk->device));
    if ((st = load_device_fns(vk)) != LOOM_OK) return st;
    VKF(vkGetDeviceQueue)(vk->device, qf, 0, &vk->queue);
    return LOOM_OK;
}

/* vk->phys and vk->props set: version check, memory, limits */
static loom_status read_caps(loom__vk *vk) {
    if (vk->props.apiVersion < VK_API_VERSION_1_2)
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: device %d '%s' supports Vulkan %u.%u; loom needs 1.2",
                         vk->device_index, vk->props.deviceName, VK_API_VERSION_MAJOR(vk->props.apiVersion),
                         VK_API_VERSION_MINOR(vk->props.apiVersion));
    VKF(vkGetPhysicalDeviceMemoryProperties)(vk->phys, &vk->mem);
    VkPhysicalDeviceVulkan11Properties p11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &p11};
    VKF(vkGetPhysicalDeviceProperties2)(vk->phys, &p2);
    vk->subgroup_size = p11.subgroupSize;
    const VkPhysicalDeviceLimits *lim = &vk->props.limits;
    uint32_t cap = lim->maxComputeWorkGroupInvocations < lim->maxComputeWorkGroupSize[0]
                       ? lim->maxComputeWorkGroupInvocations
                       : lim->maxComputeWorkGroupSize[0];
    vk->max_local = 1;
    while (vk->max_local < 256 && vk->max_local * 2 <= cap) vk->max_local *= 2;
    return LOOM_OK;
}

/* Uniform texel buffers for the texel GEMM (ops/matmul.c) and im2col (ops/conv2d.c), on CPU devices
 * only (lavapipe: texel fetches are vector gathers where storage-buffer
 * loads are lane loops; a GPU keeps its shared-memory GEMM and its buffers
 * their usual usage): a view format per storage dtype whose buffer features
 * allow uniform texel buffers. */
/* f if the device can make uniform texel buffers of it, else VK_FORMAT_UNDEFINED */
static VkFormat texel_format(const loom__vk *vk, VkFormat f) {
    if (f == VK_FORMAT_UNDEFINED) return f;
    VkFormatProperties fp;
    VKF(vkGetPhysicalDeviceFormatProperties)(vk->phys, f, &fp);
    return fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT ? f : VK_FORMAT_UNDEFINED;
}

static void texel_formats(loom__vk *vk) {
    static const VkFormat want[3] = {VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R32G32_UINT, VK_FORMAT_R16G16B16A16_UINT};
    static const VkFormat want1[3] = {VK_FORMAT_R32_SFLOAT, VK_FORMAT_R16_UINT, VK_FORMAT_R16_UINT};
    static const VkFormat want8[3] = {VK_FORMAT_UNDEFINED, VK_FORMAT_R32G32B32A32_UINT, VK_FORMAT_R32G32B32A32_UINT};
    for (int i = 0; i < 3; i++) vk->texel_fmt[i] = vk->texel_fmt1[i] = vk->texel_fmt8[i] = VK_FORMAT_UNDEFINED;
    /* RGBA32F is the dummy view's format: without it, no texel views at all */
    vk->texel = vk->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU && texel_format(vk, want[0]) != VK_FORMAT_UNDEFINED;
    if (!vk->texel) return;
    for (int i = 0; i < 3; i++) {
        vk->texel_fmt[i] = texel_format(vk, want[i]);
        vk->texel_fmt1[i] = texel_format(vk, want1[i]);
        vk->texel_fmt8[i] = texel_format(vk, want8[i]);
    }
}

/* the device and queue are there: loom's own objects on them */
static loom_status finish_open(loom__vk *vk) {
    loom_status st;
    VkCommandPoolCreateInfo pi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = vk->queue_family;
    LOOM_VK_CHECK(vk, VKF(vkCreateCommandPool)(vk->device, &pi, NULL, &vk->pool));
    VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = vk->pool;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    LOOM_VK_CHECK(vk, VKF(vkAllocateCommandBuffers)(vk->device, &ai, &vk->xfer));
    VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    LOOM_VK_CHECK(vk, VKF(vkCreateFence)(vk->device, &fi, NULL, &vk->fence));
    static const char *const sw[] = {"LOOM_VULKAN_STAGING",    "LOOM_VULKAN_CONV_ROWS",   "LOOM_VULKAN_CONV_GI_FWD",
                                     "LOOM_VULKAN_CONV_FLAT",  "LOOM_VULKAN_CONV_PLANES", "LOOM_VULKAN_GEMM_VSTORE",
                                     "LOOM_VULKAN_CONV_IMPLICIT", "LOOM_VULKAN_CONV_FIXED", "LOOM_VULKAN_BN_SPLIT",
                                     "LOOM_VULKAN_CONV_SHARE_COLS", "LOOM_VULKAN_FUSE",
                                     "LOOM_VULKAN_ATTN_GEMM", "LOOM_VULKAN_ROWS", "LOOM_VULKAN_REDUCE_FLAT"};
    if ((st = loom__env_switches_check(vk->ctx, sw, (int)(sizeof sw / sizeof sw[0]))) != LOOM_OK) return st;
    texel_formats(vk);
    if ((st = loom__vk_pick_memory(vk)) != LOOM_OK) return st;
    if ((st = loom__vk_layouts_create(vk)) != LOOM_OK) return st;
    if ((st = loom__vk_alloc(vk, vk->type_device, 16, &vk->dummy)) != LOOM_OK) return st;
    if (vk->texel) {
        VkBufferViewCreateInfo vi = {VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
        vi.buffer = vk->dummy->buf, vi.format = VK_FORMAT_R32G32B32A32_SFLOAT, vi.offset = 0, vi.range = VK_WHOLE_SIZE;
        LOOM_VK_CHECK(vk, VKF(vkCreateBufferView)(vk->device, &vi, NULL, &vk->dummy_view));
    }
    loom__log(vk->ctx, LOOM_LOG_INFO, "vulkan: device %d %s (%s)%s%s", vk->device_index, vk->props.deviceName,
              type_name(vk->props.deviceType), vk->adopted ? ", adopted from the application" : "",
              vk->validation ? ", validation on" : "");
    return LOOM_OK;
}

loom_status loom__vk_open(loom__vk *vk, const loom_backend_desc *desc) {
    if (!have_loader())
        return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED,
                         "vulkan: no Vulkan loader (libvulkan.so.1 not found; Debian/Ubuntu: apt install libvulkan1)");
    vk->validation = env_on("LOOM_VULKAN_VALIDATION");
    char why[400];
    VkResult r = make_instance(vk, vk->validation, &vk->instance, why, sizeof why);
    if (r != VK_SUCCESS)
        return loom__err(vk->ctx, r == VK_ERROR_LAYER_NOT_PRESENT ? LOOM_ERR_UNSUPPORTED : LOOM_ERR_BACKEND,
                         "vulkan: %s", why);
    bool ok = true;
#define LOAD(n) ok &= (vk->fn.n = (PFN_##n)loader.gipa(vk->instance, #n)) != NULL;
    LOOM__VK_INSTANCE_FNS(LOAD)
#undef LOAD
    if (!ok) return loom__err(vk->ctx, LOOM_ERR_BACKEND, "vulkan: the loader lacks a Vulkan 1.1 instance function");
    if (vk->validation) {
#define LOAD(n) ok &= (vk->fn.n = (PFN_##n)loader.gipa(vk->instance, #n)) != NULL;
        LOOM__VK_DEBUG_FNS(LOAD)
#undef LOAD
        if (!ok) return loom__err(vk->ctx, LOOM_ERR_BACKEND, "vulkan: VK_EXT_debug_utils functions missing");
        VkDebugUtilsMessengerCreateInfoEXT mi = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
        mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
        mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
        mi.pfnUserCallback = on_message;
        mi.pUserData = vk;
        LOOM_VK_CHECK(vk, VKF(vkCreateDebugUtilsMessengerEXT)(vk->instance, &mi, NULL, &vk->messenger));
    }
    devlist l;
    list_devices(VKF(vkEnumeratePhysicalDevices), VKF(vkGetPhysicalDeviceProperties), vk->instance, &l);
    if (l.n == 0) return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED, "vulkan: no Vulkan device");
    const char *env = getenv("LOOM_VULKAN_DEVICE");
    char msg[768];
    int i;
    if (desc && desc->device > 0) {
        snprintf(why, sizeof why, "%d", desc->device);
        if ((i = pick(&l, why, msg, sizeof msg)) < 0)
            return loom__err(vk->ctx, LOOM_ERR_INVALID_ARG, "vulkan: loom_backend_desc.device: %s", msg);
    } else if (env && *env) {
        if ((i = pick(&l, env, msg, sizeof msg)) < 0)
            return loom__err(vk->ctx, LOOM_ERR_INVALID_ARG, "vulkan: LOOM_VULKAN_DEVICE: %s", msg);
    } else {
        i = default_device(&l);
    }
    vk->device_index = i;
    vk->phys = l.dev[i];
    vk->props = l.props[i];
    loom_status st;
    if ((st = read_caps(vk)) != LOOM_OK || (st = create_device(vk)) != LOOM_OK) return st;
    return finish_open(vk);
}

/* ---- adoption (loom_vulkan_backend_create) ---- */

/* Keep only the features the application enabled (its VkDeviceCreateInfo). */
static void enabled_features(loom__vk *vk, const VkDeviceCreateInfo *ci) {
    bool s16 = false, s8 = false, f16 = false, i8 = false, i16 = false, i64 = false, f64 = false;
    if (ci->pEnabledFeatures)
        i16 = ci->pEnabledFeatures->shaderInt16, i64 = ci->pEnabledFeatures->shaderInt64,
        f64 = ci->pEnabledFeatures->shaderFloat64;
    for (const VkBaseInStructure *s = ci->pNext; s; s = s->pNext) {
        const void *v = s;
        switch (s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2: {
            const VkPhysicalDeviceFeatures2 *f = v;
            i16 |= f->features.shaderInt16, i64 |= f->features.shaderInt64, f64 |= f->features.shaderFloat64;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES:
            s16 |= ((const VkPhysicalDeviceVulkan11Features *)v)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            const VkPhysicalDeviceVulkan12Features *f = v;
            s8 |= f->storageBuffer8BitAccess, f16 |= f->shaderFloat16, i8 |= f->shaderInt8;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES:
            s16 |= ((const VkPhysicalDevice16BitStorageFeatures *)v)->storageBuffer16BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES:
            s8 |= ((const VkPhysicalDevice8BitStorageFeatures *)v)->storageBuffer8BitAccess;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
            const VkPhysicalDeviceShaderFloat16Int8Features *f = v;
            f16 |= f->shaderFloat16, i8 |= f->shaderInt8;
            break;
        }
        default: break;
        }
    }
    vk->storage16 &= s16, vk->storage8 &= s8, vk->float16 &= f16;
    vk->int8 &= i8, vk->int16 &= i16, vk->int64 &= i64, vk->float64 &= f64;
}

static void queue_flags_str(VkQueueFlags f, char *out, size_t n) {
    snprintf(out, n, "%s%s%s%s", f & VK_QUEUE_GRAPHICS_BIT ? " graphics" : "", f & VK_QUEUE_COMPUTE_BIT ? " compute" : "",
             f & VK_QUEUE_TRANSFER_BIT ? " transfer" : "", f & VK_QUEUE_SPARSE_BINDING_BIT ? " sparse" : "");
    if (!*out) snprintf(out, n, " none");
}

static loom_status adopt_queue(loom__vk *vk, uint32_t qf) {
    uint32_t nq = 0;
    VKF(vkGetPhysicalDeviceQueueFamilyProperties)(vk->phys, &nq, NULL);
    VkQueueFamilyProperties *qp = calloc(nq ? nq : 1, sizeof *qp);
    if (!qp) return loom__err(vk->ctx, LOOM_ERR_OOM, "vulkan: out of memory");
    VKF(vkGetPhysicalDeviceQueueFamilyProperties)(vk->phys, &nq, qp);
    loom_status st = LOOM_OK;
    if (qf >= nq) {
        st = loom__err(vk->ctx, LOOM_ERR_INVALID_ARG,
                       "vulkan: loom_vulkan_adopt.queue_family %u does not exist: device '%s' has %u queue families", qf,
                       vk->props.deviceName, nq);
    } else if (!(qp[qf].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
        char flags[64], with[128] = "";
        queue_flags_str(qp[qf].queueFlags, flags, sizeof flags);
        for (uint32_t i = 0; i < nq; i++)
            if (qp[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
                snprintf(with + strlen(with), sizeof with - strlen(with), " %u", i);
        st = loom__err(vk->ctx, LOOM_ERR_INVALID_ARG,
                       "vulkan: loom_vulkan_adopt.queue_family %u of device '%s' does not support compute (flags:%s); "
                       "families with compute:%s",
                       qf, vk->props.deviceName, flags, *with ? with : " none");
    } else {
        vk->queue_family = qf;
        vk->timestamp_bits = qp[qf].timestampValidBits;
    }
    free(qp);
    return st;
}

loom_status loom__vk_adopt(loom__vk *vk, const loom_vulkan_adopt *a) {
    PFN_vkGetInstanceProcAddr gipa = a->get_instance_proc_addr;
    if (!gipa) {
        if (!have_loader())
            return loom__err(vk->ctx, LOOM_ERR_UNSUPPORTED,
                             "vulkan: no Vulkan loader (libvulkan.so.1 not found); pass the application's "
                             "vkGetInstanceProcAddr in loom_vulkan_adopt.get_instance_proc_addr");
        gipa = loader.gipa;
    }
    vk->adopted = true;
    vk->device_index = -1;
    vk->instance = a->instance;
#ifdef LOOM_PIN_DRIVERS
    pin_drivers(); /* the application's driver, for the leak reports of sanitizer builds */
#endif
    const char *missing = NULL;
#define LOAD(n) \
    if (!(vk->fn.n = (PFN_##n)gipa(vk->instance, #n)) && !missing) missing = #n;
    LOOM__VK_INSTANCE_FNS(LOAD)
#undef LOAD
    if (missing)
        return loom__err(vk->ctx, LOOM_ERR_BACKEND,
                         "vulkan: the application's instance has no %s (create it with apiVersion >= 1.2)", missing);
    vk->phys = a->physical_device;
    VKF(vkGetPhysicalDeviceProperties)(vk->phys, &vk->props);
    devlist l;
    list_devices(VKF(vkEnumeratePhysicalDevices), VKF(vkGetPhysicalDeviceProperties), vk->instance, &l);
    for (uint32_t i = 0; i < l.n; i++)
        if (l.dev[i] == vk->phys) vk->device_index = (int)i;
    loom_status st;
    if ((st = read_caps(vk)) != LOOM_OK || (st = query_features(vk)) != LOOM_OK) return st;
    if (a->device_create_info) enabled_features(vk, a->device_create_info);
    if ((st = adopt_queue(vk, a->queue_family)) != LOOM_OK) return st;
    vk->device = a->device;
    if ((st = load_device_fns(vk)) != LOOM_OK) return st;
    vk->queue = a->queue;
    return finish_open(vk);
}

void loom__vk_close(loom__vk *vk) {
    if (vk->device) {
        /* an adopted device: every submission of loom's was waited for, and the
         * application's queues are not loom's to wait on */
        if (!vk->adopted) VKF(vkDeviceWaitIdle)(vk->device);
        loom__vk_host_free_all(vk);
        if (vk->dummy_view) VKF(vkDestroyBufferView)(vk->device, vk->dummy_view, NULL);
        if (vk->dummy) loom__vk_free(vk, vk->dummy);
        if (vk->staging) loom__vk_free(vk, vk->staging);
        loom__vk_pipelines_destroy(vk);
        loom__vk_free_all_blocks(vk);
        if (vk->fence) VKF(vkDestroyFence)(vk->device, vk->fence, NULL);
        if (vk->pool) VKF(vkDestroyCommandPool)(vk->device, vk->pool, NULL);
        /* report anything left that nobody can return any more */
        if (vk->validation && vk->vmsg_count > vk->vmsg_seen)
            fprintf(stderr, "loom: vulkan validation (during destroy): %s\n", vk->vmsg);
        vk->vmsg_count = -1; /* from here on the messenger prints */
        if (!vk->adopted) VKF(vkDestroyDevice)(vk->device, NULL);
        vk->device = VK_NULL_HANDLE;
    } else {
        vk->vmsg_count = -1;
    }
    if (vk->adopted) return; /* the instance is the application's */
    if (vk->messenger) VKF(vkDestroyDebugUtilsMessengerEXT)(vk->instance, vk->messenger, NULL);
    if (vk->instance) VKF(vkDestroyInstance)(vk->instance, NULL);
}

loom_status loom__vk_submit_wait(loom__vk *vk, VkCommandBuffer cmd) { return loom__vk_submit2_wait(vk, cmd, VK_NULL_HANDLE); }

loom_status loom__vk_submit2_wait(loom__vk *vk, VkCommandBuffer cmd, VkCommandBuffer cmd2) {
    VkCommandBuffer cmds[2] = {cmd, cmd2};
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = cmd2 != VK_NULL_HANDLE ? 2 : 1; /* in submission order: cmd2's copy waits for cmd's work (its barrier) */
    si.pCommandBuffers = cmds;
    LOOM_VK_CHECK(vk, VKF(vkResetFences)(vk->device, 1, &vk->fence));
    LOOM_VK_CHECK(vk, VKF(vkQueueSubmit)(vk->queue, 1, &si, vk->fence));
    LOOM_VK_CHECK(vk, VKF(vkWaitForFences)(vk->device, 1, &vk->fence, VK_TRUE, UINT64_MAX));
    loom__stat_sync(vk->stats, 1, 1);
    return LOOM_OK;
}

void loom__vk_describe(const loom_backend *be, FILE *out) {
    const loom__vk *vk = be->impl;
    const VkPhysicalDeviceProperties *p = &vk->props;
    const VkPhysicalDeviceLimits *l = &p->limits;
    fprintf(out, "  device %d: %s, %s, vendor 0x%04x device 0x%04x%s\n", vk->device_index, p->deviceName,
            type_name(p->deviceType), p->vendorID, p->deviceID,
            vk->adopted ? " (the application's device and queue, loom_vulkan_backend_create)" : "");
    fprintf(out, "  Vulkan %u.%u.%u, driver version 0x%08x%s\n", VK_API_VERSION_MAJOR(p->apiVersion),
            VK_API_VERSION_MINOR(p->apiVersion), VK_API_VERSION_PATCH(p->apiVersion), p->driverVersion,
            vk->validation ? "; validation layer on (LOOM_VULKAN_VALIDATION)" : "");
    fprintf(out, "  16-bit storage %s, 8-bit storage %s, fp16 math %s, int64 %s, fp64 %s, subgroup size %u, "
                 "VK_KHR_cooperative_matrix %s\n",
            vk->storage16 ? "yes" : "no", vk->storage8 ? "yes" : "no", vk->float16 ? "yes" : "no",
            vk->int64 ? "yes" : "no", vk->float64 ? "yes" : "no", vk->subgroup_size, vk->coopmat ? "yes" : "no");
    for (uint32_t h = 0; h < vk->mem.memoryHeapCount; h++)
        fprintf(out, "  memory heap %u: %.1f GiB%s\n", h, (double)vk->mem.memoryHeaps[h].size / (1u << 30),
                vk->mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT ? " device-local" : "");
    fprintf(out, "  tensor memory: type %u (%s)\n", vk->type_device,
            vk->direct ? "device-local and host-visible: mapped directly" : "device-local, staged copies");
    fprintf(out, "  max work-group %u (%u x %u x %u), work-group counts %u x %u x %u, minStorageBufferOffsetAlignment %llu, "
                 "maxStorageBufferRange %u\n",
            l->maxComputeWorkGroupInvocations, l->maxComputeWorkGroupSize[0], l->maxComputeWorkGroupSize[1],
            l->maxComputeWorkGroupSize[2], l->maxComputeWorkGroupCount[0], l->maxComputeWorkGroupCount[1],
            l->maxComputeWorkGroupCount[2], (unsigned long long)l->minStorageBufferOffsetAlignment,
            l->maxStorageBufferRange);
    fprintf(out, "  timestamps: %s\n", vk->timestamp_bits ? "yes (op profiling)" : "no (op profiling unavailable)");
    char dir[512];
    loom__vk_cache_dir(dir, sizeof dir);
    fprintf(out, "  dtypes: f32 f16 bf16 (16-bit stored, computed in f32); i32 u8 for data movement; f64 not supported\n");
    fprintf(out, "  %d shader variants embedded, %d pipelines created so far; pipeline cache: %s\n", loom__vk_shader_count,
            vk->n_pipelines, *dir ? dir : "off (LOOM_VULKAN_CACHE=off)");
    fprintf(out, "  device selection: LOOM_VULKAN_DEVICE=N; validation: LOOM_VULKAN_VALIDATION=1\n");
}
