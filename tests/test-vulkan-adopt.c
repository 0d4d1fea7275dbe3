/* tests/test-vulkan-adopt.c — loom embedded in a Vulkan application
 * (include/loom/vulkan.h). The test plays the application: it opens the
 * loader itself (dlopen), creates its own instance (with the Khronos
 * validation layer and its own messenger when LOOM_VULKAN_VALIDATION=1),
 * device (16-bit storage enabled when present) and compute queue, and a
 * host-visible VkBuffer holding an input batch that it fills through mapped
 * memory. loom gets the device and queue (loom_vulkan_backend_create) and
 * runs a training step of a tiny MLP (linear-relu-linear, cross-entropy,
 * SGD with momentum) whose inputs x and labels live in that buffer
 * (loom_vulkan_bind_buffer); each step's loss must match the same step on
 * the CPU backend (1e-5 relative), also after the application rewrites the
 * buffer and after loom_plan_write writes into it. Also: the errors of both
 * functions, and the application's objects still valid after loom is gone.
 * Skipped (77) without a Vulkan loader or device. Any validation message
 * fails the test. */
#define VK_NO_PROTOTYPES
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "loom/vulkan.h"
#include "testutil.h"

enum { N = 8, IN = 12, HID = 16, C = 4 };

/* ---- the application's Vulkan functions ---- */
#define GLOBAL_FNS(X) X(vkCreateInstance) X(vkEnumerateInstanceLayerProperties)
#define INSTANCE_FNS(X)                                                                                      \
    X(vkDestroyInstance) X(vkEnumeratePhysicalDevices) X(vkGetPhysicalDeviceProperties)                       \
    X(vkGetPhysicalDeviceFeatures2) X(vkGetPhysicalDeviceQueueFamilyProperties)                               \
    X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) X(vkGetDeviceProcAddr)
#define DEBUG_FNS(X) X(vkCreateDebugUtilsMessengerEXT) X(vkDestroyDebugUtilsMessengerEXT)
#define DEVICE_FNS(X)                                                                                        \
    X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkCreateBuffer) X(vkDestroyBuffer)           \
    X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) X(vkMapMemory) \
    X(vkUnmapMemory)
#define MEMBER(n) static PFN_##n n;
GLOBAL_FNS(MEMBER)
INSTANCE_FNS(MEMBER)
DEBUG_FNS(MEMBER)
DEVICE_FNS(MEMBER)
#undef MEMBER
static PFN_vkGetInstanceProcAddr gipa;

static int vmsgs; /* validation warnings and errors seen */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                  VkDebugUtilsMessageTypeFlagsEXT type,
                                                  const VkDebugUtilsMessengerCallbackDataEXT *d, void *user) {
    (void)type, (void)user;
    if (sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
        vmsgs++;
        printf("validation: %s\n", d && d->pMessage ? d->pMessage : "(no message)");
    }
    return VK_FALSE;
}

typedef struct app {
    void *lib;
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice phys;
    VkPhysicalDeviceProperties props;
    VkDevice device;
    VkDeviceCreateInfo dci; /* as created (for loom_vulkan_adopt.device_create_info) */
    VkPhysicalDeviceVulkan11Features f11;
    uint32_t qf;
    VkQueue queue;
    VkBuffer buf;
    VkDeviceMemory mem;
    unsigned char *map;
    VkDeviceSize off_x, off_y, size;
} app;

/* 0 = ready; 77 = skip (reason printed); 1 = failure */
static int app_open(app *a) {
    memset(a, 0, sizeof *a);
    if (!(a->lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL)) ||
        !(gipa = (PFN_vkGetInstanceProcAddr)dlsym(a->lib, "vkGetInstanceProcAddr")))
        return tu_skip("no Vulkan loader (libvulkan.so.1)");
#define LOAD(n) n = (PFN_##n)gipa(NULL, #n);
    GLOBAL_FNS(LOAD)
#undef LOAD
    const char *e = getenv("LOOM_VULKAN_VALIDATION");
    bool validation = e && *e && strcmp(e, "0") != 0;
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo ai = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
    ai.pApplicationName = "test-vulkan-adopt";
    ai.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &ai;
    VkDebugUtilsMessengerCreateInfoEXT mi = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_message;
    VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
    VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT, &mi};
    vf.enabledValidationFeatureCount = 1;
    vf.pEnabledValidationFeatures = &sync;
    if (validation) {
        uint32_t n = 0;
        vkEnumerateInstanceLayerProperties(&n, NULL);
        VkLayerProperties *lp = calloc(n ? n : 1, sizeof *lp);
        bool found = false;
        if (vkEnumerateInstanceLayerProperties(&n, lp) >= 0)
            for (uint32_t i = 0; i < n; i++) found |= strcmp(lp[i].layerName, layer) == 0;
        free(lp);
        if (!found) {
            printf("LOOM_VULKAN_VALIDATION is set but %s is not installed (apt install vulkan-validationlayers)\n", layer);
            return 1;
        }
        ci.pNext = &vf;
        ci.enabledLayerCount = 1;
        ci.ppEnabledLayerNames = &layer;
        ci.enabledExtensionCount = 1;
        ci.ppEnabledExtensionNames = &ext;
    }
    VkResult r = vkCreateInstance(&ci, NULL, &a->instance);
    if (r != VK_SUCCESS) {
        a->instance = VK_NULL_HANDLE;
        printf("vkCreateInstance: VkResult %d\n", (int)r);
        return tu_skip(r == VK_ERROR_INCOMPATIBLE_DRIVER ? "no Vulkan device (no driver: VK_ERROR_INCOMPATIBLE_DRIVER)"
                                                         : "no usable Vulkan instance (vkCreateInstance failed)");
    }
#define LOAD(n) n = (PFN_##n)gipa(a->instance, #n);
    INSTANCE_FNS(LOAD)
    if (validation) DEBUG_FNS(LOAD)
#undef LOAD
    if (validation && vkCreateDebugUtilsMessengerEXT(a->instance, &mi, NULL, &a->messenger) != VK_SUCCESS) {
        printf("vkCreateDebugUtilsMessengerEXT failed\n");
        return 1;
    }
    /* the device: LOOM_VULKAN_DEVICE, else the first discrete / integrated GPU, else the first */
    VkPhysicalDevice devs[16];
    uint32_t nd = 16;
    if (vkEnumeratePhysicalDevices(a->instance, &nd, devs) < 0 || nd == 0) return tu_skip("no Vulkan device");
    int pick = -1;
    const char *env = getenv("LOOM_VULKAN_DEVICE");
    if (env && *env && atoi(env) >= 0 && (uint32_t)atoi(env) < nd) pick = atoi(env);
    for (int want = 0; want < 2 && pick < 0; want++)
        for (uint32_t i = 0; i < nd && pick < 0; i++) {
            vkGetPhysicalDeviceProperties(devs[i], &a->props);
            if (a->props.deviceType == (want ? VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU : VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU))
                pick = (int)i;
        }
    if (pick < 0) pick = 0;
    a->phys = devs[pick];
    vkGetPhysicalDeviceProperties(a->phys, &a->props);
    if (a->props.apiVersion < VK_API_VERSION_1_2) return tu_skip("the Vulkan device is older than 1.2");
    /* a compute queue family */
    VkQueueFamilyProperties qp[16];
    uint32_t nq = 16;
    vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &nq, qp);
    a->qf = UINT32_MAX;
    for (uint32_t i = 0; i < nq && a->qf == UINT32_MAX; i++)
        if (qp[i].queueFlags & VK_QUEUE_COMPUTE_BIT) a->qf = i;
    if (a->qf == UINT32_MAX) return tu_skip("the Vulkan device has no compute queue");
    /* 16-bit storage if present (what loom's f16/bf16 shaders need) */
    VkPhysicalDeviceVulkan11Features have = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &have};
    vkGetPhysicalDeviceFeatures2(a->phys, &f2);
    a->f11 = (VkPhysicalDeviceVulkan11Features){VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    a->f11.storageBuffer16BitAccess = have.storageBuffer16BitAccess;
    static const float prio = 1.0f;
    static VkDeviceQueueCreateInfo qi = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = a->qf;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    a->dci = (VkDeviceCreateInfo){VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &a->f11};
    a->dci.queueCreateInfoCount = 1;
    a->dci.pQueueCreateInfos = &qi;
    if (vkCreateDevice(a->phys, &a->dci, NULL, &a->device) != VK_SUCCESS) {
        printf("vkCreateDevice failed\n");
        return 1;
    }
#define LOAD(n) n = (PFN_##n)vkGetDeviceProcAddr(a->device, #n);
    DEVICE_FNS(LOAD)
#undef LOAD
    vkGetDeviceQueue(a->device, a->qf, 0, &a->queue);
    printf("device: %s (Vulkan %u.%u), queue family %u, 16-bit storage %s, validation %s\n", a->props.deviceName,
           VK_API_VERSION_MAJOR(a->props.apiVersion), VK_API_VERSION_MINOR(a->props.apiVersion), a->qf,
           a->f11.storageBuffer16BitAccess ? "on" : "off", validation ? "on" : "off");

    /* one host-visible buffer: labels (i32, N) at 0, x (f32, N x IN) at an aligned offset */
    VkDeviceSize al = a->props.limits.minStorageBufferOffsetAlignment < 4 ? 4 : a->props.limits.minStorageBufferOffsetAlignment;
    a->off_y = 0;
    a->off_x = (64 + al - 1) / al * al;
    a->size = a->off_x + (VkDeviceSize)N * IN * sizeof(float) + 64;
    VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = a->size;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    if (vkCreateBuffer(a->device, &bi, NULL, &a->buf) != VK_SUCCESS) {
        printf("vkCreateBuffer failed\n");
        return 1;
    }
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(a->device, a->buf, &req);
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(a->phys, &mp);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < mp.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & want) == want) type = i;
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    mai.allocationSize = req.size;
    mai.memoryTypeIndex = type;
    void *map = NULL;
    if (type == UINT32_MAX || vkAllocateMemory(a->device, &mai, NULL, &a->mem) != VK_SUCCESS ||
        vkBindBufferMemory(a->device, a->buf, a->mem, 0) != VK_SUCCESS ||
        vkMapMemory(a->device, a->mem, 0, VK_WHOLE_SIZE, 0, &map) != VK_SUCCESS) {
        printf("no host-visible coherent memory for the input buffer\n");
        return 1;
    }
    a->map = map;
    return 0;
}

static void app_close(app *a) {
    if (a->device) {
        vkDeviceWaitIdle(a->device);
        if (a->map) vkUnmapMemory(a->device, a->mem);
        if (a->buf) vkDestroyBuffer(a->device, a->buf, NULL);
        if (a->mem) vkFreeMemory(a->device, a->mem, NULL);
        vkDestroyDevice(a->device, NULL);
    }
    if (a->messenger) vkDestroyDebugUtilsMessengerEXT(a->instance, a->messenger, NULL);
    if (a->instance) vkDestroyInstance(a->instance, NULL);
    if (a->lib) dlclose(a->lib);
}

/* ---- the model ---- */
typedef struct model {
    loom_graph *g;
    loom_tensor *x, *y, *w1, *loss;
    loom_optimizer *opt;
    loom_plan *p;
} model;

/* x (N, IN) -> fc1 (HID) -> relu -> fc2 (C) -> cross-entropy with y (N);
 * train: backward + SGD; share: compile sharing that plan's parameters */
static loom_status model_build(loom_ctx *ctx, loom_backend *be, bool train, const loom_plan *share, model *m) {
    memset(m, 0, sizeof *m);
    loom_graph_desc gd = {0};
    gd.seed = 7;
    loom_status st = loom_graph_create(ctx, &gd, &m->g);
    if (st != LOOM_OK) return st;
    loom_graph *g = m->g;
    loom_init ku = {LOOM_INIT_KAIMING_UNIFORM, sqrt(5.0), 0}, bu = {LOOM_INIT_UNIFORM, -0.2, 0.2};
    m->x = loom_input(g, "x", LOOM_F32, 2, (int64_t[]){N, IN});
    m->y = loom_input(g, "y", LOOM_I32, 1, (int64_t[]){N});
    m->w1 = loom_param(g, "fc1.weight", LOOM_F32, 2, (int64_t[]){HID, IN}, &ku);
    loom_tensor *b1 = loom_param(g, "fc1.bias", LOOM_F32, 1, (int64_t[]){HID}, &bu);
    loom_tensor *w2 = loom_param(g, "fc2.weight", LOOM_F32, 2, (int64_t[]){C, HID}, &ku);
    loom_tensor *b2 = loom_param(g, "fc2.bias", LOOM_F32, 1, (int64_t[]){C}, &bu);
    loom_tensor *h = loom_relu(g, loom_linear(g, m->x, m->w1, b1));
    m->loss = loom_cross_entropy(g, loom_linear(g, h, w2, b2), m->y, 0.0, -100);
    loom_keep(m->loss);
    if (train) {
        if ((st = loom_backward(g, m->loss)) != LOOM_OK) return st;
        loom_optimizer_desc od = {0};
        od.kind = LOOM_OPT_SGD;
        od.momentum = 0.9;
        if ((st = loom_optimizer_create(g, &od, &m->opt)) != LOOM_OK) return st;
    }
    loom_plan_desc pd = {0};
    pd.share = share;
    return loom_plan_compile(g, be, &pd, &m->p);
}

static void model_free(model *m) {
    loom_plan_destroy(m->p);
    loom_optimizer_destroy(m->opt);
    loom_graph_destroy(m->g);
}

static loom_status step(model *m, float *loss) {
    loom_status st = loom_optimizer_begin_step(m->opt, m->p, 0.1);
    if (st == LOOM_OK) st = loom_plan_run(m->p);
    if (st == LOOM_OK) st = loom_plan_read_f32(m->p, m->loss, loss, 1);
    return st;
}

/* batch k: x in [-k, k), labels in [0, C) */
static void batch(int k, float *x, int32_t *y) {
    uint32_t s = 1234u + 977u * (uint32_t)k;
    for (int i = 0; i < N * IN; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(k * ((s >> 8) * (2.0 / 16777216.0) - 1.0));
    }
    for (int i = 0; i < N; i++) y[i] = (i * 3 + k) % C;
}

static bool close_rel(float a, float b) { return fabsf(a - b) <= 1e-5f * fabsf(b); }

static bool has(const char *s, const char *part) { return s && strstr(s, part); }

int main(void) {
    app a;
    int r = app_open(&a);
    if (r) {
        app_close(&a);
        return r;
    }
    loom_ctx *ctx;
    loom_backend *cpu;
    if (!tu_cpu_open(1, &ctx, &cpu)) return 1;

    /* errors of loom_vulkan_backend_create */
    loom_vulkan_adopt ad = {a.instance, a.phys, a.device, a.queue, a.qf, gipa, &a.dci};
    loom_backend *vk = NULL;
    loom_vulkan_adopt bad = ad;
    bad.queue_family = 99;
    CHECK(loom_vulkan_backend_create(ctx, &bad, &vk) == LOOM_ERR_INVALID_ARG && !vk &&
              has(loom_last_error(ctx), "queue_family 99"),
          "queue family 99 refused: %s", loom_last_error(ctx));
    bad = ad;
    bad.queue = VK_NULL_HANDLE;
    CHECK(loom_vulkan_backend_create(ctx, &bad, &vk) == LOOM_ERR_INVALID_ARG && has(loom_last_error(ctx), "queue is NULL"),
          "NULL queue refused: %s", loom_last_error(ctx));

    /* the backend on the application's device; once with loom's own loader */
    ad.get_instance_proc_addr = NULL;
    CHECK_OK(ctx, loom_vulkan_backend_create(ctx, &ad, &vk));
    loom_backend_destroy(vk);
    vk = NULL;
    ad.get_instance_proc_addr = gipa;
    CHECK_OK(ctx, loom_vulkan_backend_create(ctx, &ad, &vk));
    if (!vk) {
        tu_cpu_close(ctx, cpu);
        app_close(&a);
        return tu_summary();
    }
    loom_backend_describe(vk, stdout);

    model mc, mv, mo; /* cpu, vulkan, and cpu seeing batch 1 twice (what a stale input would give) */
    CHECK_OK(ctx, model_build(ctx, cpu, true, NULL, &mc));
    CHECK_OK(ctx, model_build(ctx, vk, true, NULL, &mv));
    CHECK_OK(ctx, model_build(ctx, cpu, true, NULL, &mo));
    if (!mc.p || !mv.p || !mo.p) goto done;

    /* the application fills its buffer; loom reads x and y from it */
    float x[N * IN], xr[N * IN];
    int32_t y[N];
    batch(1, x, y);
    memcpy(a.map + a.off_x, x, sizeof x);
    memcpy(a.map + a.off_y, y, sizeof y);
    CHECK_OK(ctx, loom_vulkan_bind_buffer(mv.p, mv.x, a.buf, a.off_x, sizeof x));
    CHECK_OK(ctx, loom_vulkan_bind_buffer(mv.p, mv.y, a.buf, a.off_y, sizeof y));
    memset(xr, 0, sizeof xr);
    CHECK_OK(ctx, loom_plan_read(mv.p, mv.x, xr, sizeof xr));
    CHECK(!memcmp(xr, x, sizeof x), "loom_plan_read of a bound tensor reads the application's buffer");

    /* step 1: the same loss as the CPU */
    float lc, lv, lo;
    CHECK_OK(ctx, loom_plan_write(mc.p, mc.x, x, sizeof x));
    CHECK_OK(ctx, loom_plan_write(mc.p, mc.y, y, sizeof y));
    CHECK_OK(ctx, loom_plan_write(mo.p, mo.x, x, sizeof x));
    CHECK_OK(ctx, loom_plan_write(mo.p, mo.y, y, sizeof y));
    CHECK_OK(ctx, step(&mc, &lc));
    CHECK_OK(ctx, step(&mo, &lo));
    CHECK_OK(ctx, step(&mv, &lv));
    printf("step 1 (batch in the application's buffer): loss vulkan %.8g, cpu %.8g\n", lv, lc);
    CHECK(close_rel(lv, lc), "step 1: vulkan loss %.9g vs cpu %.9g (rel %.3g)", lv, lc, fabs(lv - lc) / fabs(lc));

    /* step 2: the application rewrites the buffer, loom sees the new batch */
    batch(2, x, y);
    memcpy(a.map + a.off_x, x, sizeof x);
    memcpy(a.map + a.off_y, y, sizeof y);
    CHECK_OK(ctx, loom_plan_write(mc.p, mc.x, x, sizeof x));
    CHECK_OK(ctx, loom_plan_write(mc.p, mc.y, y, sizeof y));
    CHECK_OK(ctx, step(&mc, &lc));
    CHECK_OK(ctx, step(&mo, &lo));
    CHECK_OK(ctx, step(&mv, &lv));
    printf("step 2 (buffer rewritten by the application): loss vulkan %.8g, cpu %.8g (cpu on the old batch: %.8g)\n", lv,
           lc, lo);
    CHECK(close_rel(lv, lc), "step 2: vulkan loss %.9g vs cpu %.9g (rel %.3g)", lv, lc, fabs(lv - lc) / fabs(lc));
    CHECK(fabsf(lv - lo) > 1e-3f * fabsf(lo), "step 2: the loss %.9g is not the old batch's %.9g", lv, lo);

    /* errors of loom_vulkan_bind_buffer; none of them changes the plan */
    VkDeviceSize al = a.props.limits.minStorageBufferOffsetAlignment;
    VkDeviceSize mis = a.off_x + (al > 4 ? 4 : 2);
    CHECK(loom_vulkan_bind_buffer(mv.p, mv.x, a.buf, mis, sizeof x) == LOOM_ERR_INVALID_ARG &&
              has(loom_last_error(ctx), "minStorageBufferOffsetAlignment"),
          "misaligned offset refused: %s", loom_last_error(ctx));
    CHECK(loom_vulkan_bind_buffer(mv.p, mv.x, a.buf, a.off_x, sizeof x - 4) == LOOM_ERR_INVALID_ARG &&
              has(loom_last_error(ctx), "needs 384 bytes"),
          "short range refused: %s", loom_last_error(ctx));
    CHECK(loom_vulkan_bind_buffer(mv.p, mv.loss, a.buf, a.off_x, sizeof x) == LOOM_ERR_INVALID_ARG &&
              has(loom_last_error(ctx), "not an input, parameter or state"),
          "non-leaf refused: %s", loom_last_error(ctx));
    CHECK(loom_vulkan_bind_buffer(mc.p, mc.x, a.buf, a.off_x, sizeof x) == LOOM_ERR_INVALID_ARG &&
              has(loom_last_error(ctx), "backend 'cpu', not vulkan"),
          "cpu plan refused: %s", loom_last_error(ctx));
    CHECK(loom_vulkan_bind_buffer(mv.p, mv.x, VK_NULL_HANDLE, a.off_x, sizeof x) == LOOM_ERR_INVALID_ARG,
          "VK_NULL_HANDLE refused: %s", loom_last_error(ctx));
    CHECK(loom_vulkan_bind_buffer(mv.p, mc.x, a.buf, a.off_x, sizeof x) == LOOM_ERR_INVALID_ARG,
          "tensor of another graph refused: %s", loom_last_error(ctx));
    model me; /* an evaluation plan sharing the training plan's weights */
    CHECK_OK(ctx, model_build(ctx, vk, false, mv.p, &me));
    if (me.p) {
        CHECK(loom_vulkan_bind_buffer(mv.p, mv.w1, a.buf, a.off_x, 4096) == LOOM_ERR_INVALID_ARG &&
                  has(loom_last_error(ctx), "shared with 1 other plan"),
              "a parameter another plan shares refused: %s", loom_last_error(ctx));
        CHECK(loom_vulkan_bind_buffer(me.p, me.w1, a.buf, a.off_x, 4096) == LOOM_ERR_INVALID_ARG &&
                  has(loom_last_error(ctx), "belongs to the plan this one shares"),
              "a shared parameter refused: %s", loom_last_error(ctx));
    }
    model_free(&me);

    /* step 3: loom_plan_write on a bound tensor writes into the application's buffer */
    batch(3, x, y);
    CHECK_OK(ctx, loom_plan_write(mv.p, mv.x, x, sizeof x));
    CHECK_OK(ctx, loom_plan_write(mv.p, mv.y, y, sizeof y));
    CHECK(!memcmp(a.map + a.off_x, x, sizeof x) && !memcmp(a.map + a.off_y, y, sizeof y),
          "loom_plan_write of a bound tensor lands in the application's buffer");
    CHECK_OK(ctx, loom_plan_write(mc.p, mc.x, x, sizeof x));
    CHECK_OK(ctx, loom_plan_write(mc.p, mc.y, y, sizeof y));
    CHECK_OK(ctx, step(&mc, &lc));
    CHECK_OK(ctx, step(&mv, &lv));
    printf("step 3 (batch written with loom_plan_write): loss vulkan %.8g, cpu %.8g\n", lv, lc);
    CHECK(close_rel(lv, lc), "step 3: vulkan loss %.9g vs cpu %.9g (rel %.3g)", lv, lc, fabs(lv - lc) / fabs(lc));

done:
    model_free(&mv);
    model_free(&mc);
    model_free(&mo);
    loom_backend_destroy(vk);
    tu_cpu_close(ctx, cpu);
    /* loom left the application's objects alone: they still work, and go now */
    memset(a.map, 0, (size_t)a.size);
    app_close(&a);
    CHECK(vmsgs == 0, "%d validation messages", vmsgs);
    return tu_summary();
}
