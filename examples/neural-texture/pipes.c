/* examples/neural-texture/pipes.c — the application's render pass, graphics
 * pipeline and compute pipelines, and the command buffers of a frame
 * (pipes.h). */
#include "pipes.h"

#include <stdio.h>
#include <string.h>

static int render_target(vkx *v, nt_pipes *p) {
    VkImageCreateInfo ii = {VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ii.imageType = VK_IMAGE_TYPE_2D;
    ii.format = VK_FORMAT_R8G8B8A8_UNORM;
    ii.extent = (VkExtent3D){(uint32_t)p->size, (uint32_t)p->size, 1};
    ii.mipLevels = ii.arrayLayers = 1;
    ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT;
    ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    if (vkCreateImage(v->device, &ii, NULL, &p->image) != VK_SUCCESS || vkx_image_memory(v, p->image, &p->image_mem))
        return 1;
    VkImageViewCreateInfo vi = {VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = p->image;
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vi.format = ii.format;
    vi.subresourceRange = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
    if (vkCreateImageView(v->device, &vi, NULL, &p->view) != VK_SUCCESS) return 1;
    VkAttachmentDescription att = {0};
    att.format = ii.format;
    att.samples = VK_SAMPLE_COUNT_1_BIT;
    att.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR;
    att.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    att.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE;
    att.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    att.finalLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
    VkAttachmentReference ref = {0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub = {0};
    sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    sub.colorAttachmentCount = 1;
    sub.pColorAttachments = &ref;
    /* the previous frame's copy has read the image before we draw over it; our
     * drawing is written before this frame's copy reads it */
    VkSubpassDependency dep[2] = {
        {VK_SUBPASS_EXTERNAL, 0, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, 0,
         VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, 0},
        {0, VK_SUBPASS_EXTERNAL, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT,
         VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, VK_ACCESS_TRANSFER_READ_BIT, 0}};
    VkRenderPassCreateInfo rp = {VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    rp.attachmentCount = 1;
    rp.pAttachments = &att;
    rp.subpassCount = 1;
    rp.pSubpasses = &sub;
    rp.dependencyCount = 2;
    rp.pDependencies = dep;
    if (vkCreateRenderPass(v->device, &rp, NULL, &p->pass) != VK_SUCCESS) return 1;
    VkFramebufferCreateInfo fi = {VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fi.renderPass = p->pass;
    fi.attachmentCount = 1;
    fi.pAttachments = &p->view;
    fi.width = fi.height = (uint32_t)p->size;
    fi.layers = 1;
    return vkCreateFramebuffer(v->device, &fi, NULL, &p->fb) != VK_SUCCESS;
}

static int scene_pipeline(vkx *v, nt_pipes *p, const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/scene.vert.spv", dir);
    VkShaderModule vs = vkx_shader(v, path);
    snprintf(path, sizeof path, "%s/scene.frag.spv", dir);
    VkShaderModule fs = vkx_shader(v, path);
    VkPushConstantRange pc = {VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(float)};
    VkPipelineLayoutCreateInfo li = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    li.pushConstantRangeCount = 1;
    li.pPushConstantRanges = &pc;
    int rc = !vs || !fs || vkCreatePipelineLayout(v->device, &li, NULL, &p->scene_layout) != VK_SUCCESS;
    if (!rc) {
        VkPipelineShaderStageCreateInfo st[2] = {
            {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_VERTEX_BIT, vs, "main", NULL},
            {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0, VK_SHADER_STAGE_FRAGMENT_BIT, fs, "main", NULL}};
        VkPipelineVertexInputStateCreateInfo vin = {VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
        VkPipelineInputAssemblyStateCreateInfo ia = {VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
        ia.topology = VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST;
        VkViewport vp = {0, 0, (float)p->size, (float)p->size, 0, 1};
        VkRect2D sc = {{0, 0}, {(uint32_t)p->size, (uint32_t)p->size}};
        VkPipelineViewportStateCreateInfo vps = {VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
        vps.viewportCount = vps.scissorCount = 1;
        vps.pViewports = &vp;
        vps.pScissors = &sc;
        VkPipelineRasterizationStateCreateInfo rs = {VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
        rs.polygonMode = VK_POLYGON_MODE_FILL;
        rs.cullMode = VK_CULL_MODE_NONE;
        rs.lineWidth = 1;
        VkPipelineMultisampleStateCreateInfo ms = {VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
        ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
        VkPipelineColorBlendAttachmentState cba = {0};
        cba.colorWriteMask = 0xf;
        VkPipelineColorBlendStateCreateInfo cb = {VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
        cb.attachmentCount = 1;
        cb.pAttachments = &cba;
        VkGraphicsPipelineCreateInfo gi = {VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
        gi.stageCount = 2;
        gi.pStages = st;
        gi.pVertexInputState = &vin;
        gi.pInputAssemblyState = &ia;
        gi.pViewportState = &vps;
        gi.pRasterizationState = &rs;
        gi.pMultisampleState = &ms;
        gi.pColorBlendState = &cb;
        gi.layout = p->scene_layout;
        gi.renderPass = p->pass;
        rc = vkCreateGraphicsPipelines(v->device, VK_NULL_HANDLE, 1, &gi, NULL, &p->scene) != VK_SUCCESS;
    }
    if (vs) vkDestroyShaderModule(v->device, vs, NULL);
    if (fs) vkDestroyShaderModule(v->device, fs, NULL);
    return rc;
}

/* A compute pipeline over `nbuf` storage buffers (bindings 0..nbuf-1) with `push` bytes of push constants. */
static int compute_pipeline(vkx *v, const char *path, int nbuf, uint32_t push, const VkSpecializationInfo *spec,
                            VkDescriptorSetLayout *dsl, VkPipelineLayout *layout, VkPipeline *pipe) {
    VkDescriptorSetLayoutBinding bind[8];
    for (int i = 0; i < nbuf; i++)
        bind[i] = (VkDescriptorSetLayoutBinding){(uint32_t)i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                                 VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo di = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    di.bindingCount = (uint32_t)nbuf;
    di.pBindings = bind;
    VkPushConstantRange pc = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push};
    VkPipelineLayoutCreateInfo li = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    li.setLayoutCount = 1;
    li.pSetLayouts = dsl;
    li.pushConstantRangeCount = 1;
    li.pPushConstantRanges = &pc;
    VkShaderModule m = vkx_shader(v, path);
    int rc = !m || vkCreateDescriptorSetLayout(v->device, &di, NULL, dsl) != VK_SUCCESS ||
             vkCreatePipelineLayout(v->device, &li, NULL, layout) != VK_SUCCESS;
    if (!rc) {
        VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
        ci.stage = (VkPipelineShaderStageCreateInfo){VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL, 0,
                                                     VK_SHADER_STAGE_COMPUTE_BIT, m, "main", spec};
        ci.layout = *layout;
        rc = vkCreateComputePipelines(v->device, VK_NULL_HANDLE, 1, &ci, NULL, pipe) != VK_SUCCESS;
    }
    if (m) vkDestroyShaderModule(v->device, m, NULL);
    return rc;
}

static int descriptor_sets(vkx *v, nt_pipes *p, const nt_buffers *b) {
    VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 12};
    VkDescriptorPoolCreateInfo pi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = 2;
    pi.poolSizeCount = 1;
    pi.pPoolSizes = &ps;
    if (vkCreateDescriptorPool(v->device, &pi, NULL, &p->dpool) != VK_SUCCESS) return 1;
    VkDescriptorSetLayout l[2] = {p->batch_dsl, p->recon_dsl};
    VkDescriptorSet s[2];
    VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = p->dpool;
    ai.descriptorSetCount = 2;
    ai.pSetLayouts = l;
    if (vkAllocateDescriptorSets(v->device, &ai, s) != VK_SUCCESS) return 1;
    p->batch_set = s[0], p->recon_set = s[1];
    const vkx_buffer *bb[4] = {&b->frame, &b->freq, &b->x, &b->y};
    const vkx_buffer *rb[8] = {&b->freq, &b->w[0], &b->w[1], &b->w[2], &b->w[3], &b->w[4], &b->w[5], &b->recon};
    VkDescriptorBufferInfo info[12];
    VkWriteDescriptorSet w[12];
    for (int i = 0; i < 12; i++) {
        const vkx_buffer *x = i < 4 ? bb[i] : rb[i - 4];
        info[i] = (VkDescriptorBufferInfo){x->buf, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        w[i].dstSet = i < 4 ? p->batch_set : p->recon_set;
        w[i].dstBinding = (uint32_t)(i < 4 ? i : i - 4);
        w[i].descriptorCount = 1;
        w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w[i].pBufferInfo = &info[i];
    }
    vkUpdateDescriptorSets(v->device, 12, w, 0, NULL);
    VkCommandBuffer cbs[2];
    VkCommandBufferAllocateInfo ci = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ci.commandPool = v->pool;
    ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ci.commandBufferCount = 2;
    if (vkAllocateCommandBuffers(v->device, &ci, cbs) != VK_SUCCESS) return 1;
    p->frame_cb = cbs[0], p->recon_cb = cbs[1];
    return 0;
}

int nt_pipes_create(vkx *v, const char *dir, int size, int batch, const nt_buffers *b, nt_pipes *p) {
    memset(p, 0, sizeof *p);
    p->size = size, p->nbatch = batch;
    char path[4096];
    uint32_t consts[2] = {NT_NFREQ, NT_HIDDEN};
    VkSpecializationMapEntry me[2] = {{0, 0, 4}, {1, 4, 4}};
    VkSpecializationInfo spec = {2, me, sizeof consts, consts};
    if (render_target(v, p) || scene_pipeline(v, p, dir)) return 1;
    snprintf(path, sizeof path, "%s/batch.comp.spv", dir);
    if (compute_pipeline(v, path, 4, 4 * sizeof(uint32_t), NULL, &p->batch_dsl, &p->batch_layout, &p->batch)) return 1;
    snprintf(path, sizeof path, "%s/recon.comp.spv", dir);
    if (compute_pipeline(v, path, 8, sizeof(uint32_t), &spec, &p->recon_dsl, &p->recon_layout, &p->recon)) return 1;
    return descriptor_sets(v, p, b);
}

void nt_pipes_destroy(vkx *v, nt_pipes *p) {
    if (!v->device) return;
    vkDeviceWaitIdle(v->device);
    VkPipeline pipes[3] = {p->scene, p->batch, p->recon};
    VkPipelineLayout layouts[3] = {p->scene_layout, p->batch_layout, p->recon_layout};
    for (int i = 0; i < 3; i++) {
        if (pipes[i]) vkDestroyPipeline(v->device, pipes[i], NULL);
        if (layouts[i]) vkDestroyPipelineLayout(v->device, layouts[i], NULL);
    }
    if (p->dpool) vkDestroyDescriptorPool(v->device, p->dpool, NULL);
    if (p->batch_dsl) vkDestroyDescriptorSetLayout(v->device, p->batch_dsl, NULL);
    if (p->recon_dsl) vkDestroyDescriptorSetLayout(v->device, p->recon_dsl, NULL);
    if (p->fb) vkDestroyFramebuffer(v->device, p->fb, NULL);
    if (p->pass) vkDestroyRenderPass(v->device, p->pass, NULL);
    if (p->view) vkDestroyImageView(v->device, p->view, NULL);
    if (p->image) vkDestroyImage(v->device, p->image, NULL);
    if (p->image_mem) vkFreeMemory(v->device, p->image_mem, NULL);
}

static void barrier(VkCommandBuffer cb, VkPipelineStageFlags src, VkAccessFlags sa, VkPipelineStageFlags dst,
                    VkAccessFlags da) {
    VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, sa, da};
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &mb, 0, NULL, 0, NULL);
}

int nt_record_frame(vkx *v, nt_pipes *p, const nt_buffers *b, uint32_t frame, float t) {
    VkCommandBuffer cb = p->frame_cb;
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    if (vkResetCommandBuffer(cb, 0) != VK_SUCCESS || vkBeginCommandBuffer(cb, &bi) != VK_SUCCESS) return 1;
    /* the last frame's host reads of b->frame and loom's reads of x / y are over before we write them again */
    barrier(cb, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
            VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0);
    VkClearValue clear = {{{0, 0, 0, 1}}};
    VkRenderPassBeginInfo rb = {VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    rb.renderPass = p->pass;
    rb.framebuffer = p->fb;
    rb.renderArea.extent = (VkExtent2D){(uint32_t)p->size, (uint32_t)p->size};
    rb.clearValueCount = 1;
    rb.pClearValues = &clear;
    vkCmdBeginRenderPass(cb, &rb, VK_SUBPASS_CONTENTS_INLINE);
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_GRAPHICS, p->scene);
    vkCmdPushConstants(cb, p->scene_layout, VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof t, &t);
    vkCmdDraw(cb, 3, 1, 0, 0);
    vkCmdEndRenderPass(cb);
    VkBufferImageCopy region = {0};
    region.imageSubresource = (VkImageSubresourceLayers){VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
    region.imageExtent = (VkExtent3D){(uint32_t)p->size, (uint32_t)p->size, 1};
    vkCmdCopyImageToBuffer(cb, p->image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, b->frame.buf, 1, &region);
    barrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
            VK_ACCESS_SHADER_READ_BIT);
    uint32_t pc[4] = {frame, (uint32_t)p->nbatch, (uint32_t)p->size, NT_NFREQ};
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->batch);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->batch_layout, 0, 1, &p->batch_set, 0, NULL);
    vkCmdPushConstants(cb, p->batch_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof pc, pc);
    vkCmdDispatch(cb, (uint32_t)(p->nbatch + 63) / 64, 1, 1);
    /* loom's next submit reads x and y; the host reads the frame */
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_HOST_READ_BIT);
    return vkEndCommandBuffer(cb) != VK_SUCCESS;
}

int nt_record_recon(vkx *v, nt_pipes *p, const nt_buffers *b) {
    (void)v, (void)b;
    VkCommandBuffer cb = p->recon_cb;
    VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    if (vkBeginCommandBuffer(cb, &bi) != VK_SUCCESS) return 1;
    /* loom's updates of the weights (its earlier submit) are visible to our shader */
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
    uint32_t size = (uint32_t)p->size;
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->recon);
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->recon_layout, 0, 1, &p->recon_set, 0, NULL);
    vkCmdPushConstants(cb, p->recon_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof size, &size);
    vkCmdDispatch(cb, (size * size + 63) / 64, 1, 1);
    barrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT,
            VK_ACCESS_HOST_READ_BIT);
    return vkEndCommandBuffer(cb) != VK_SUCCESS;
}
