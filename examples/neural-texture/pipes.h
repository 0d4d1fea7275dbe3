/* examples/neural-texture/pipes.h — the application's own GPU work: the scene
 * (a render pass drawing a procedural picture into an offscreen image), the
 * batch shader (picks pixels of the frame and writes loom's input and target
 * buffers) and the reconstruction shader (every pixel through the network,
 * reading loom's parameter buffers). */
#ifndef NT_PIPES_H
#define NT_PIPES_H

#include "vk.h"

enum { NT_NFREQ = 32, NT_HIDDEN = 64 };

/* The buffers the shaders read and write; all created by the application. */
typedef struct nt_buffers {
    vkx_buffer frame; /* the rendered frame, RGBA8 (host-visible: PSNR and PNG) */
    vkx_buffer recon; /* the network's picture, RGBA8 (host-visible) */
    vkx_buffer freq;  /* NT_NFREQ vec2 Fourier frequencies */
    vkx_buffer x, y;  /* loom's input (batch, 2 NT_NFREQ) and target (batch, 3) */
    vkx_buffer w[6];  /* loom's parameters: fc1.weight, fc1.bias, fc2.*, fc3.* */
} nt_buffers;

typedef struct nt_pipes {
    int size, nbatch;
    VkImage image;
    VkDeviceMemory image_mem;
    VkImageView view;
    VkRenderPass pass;
    VkFramebuffer fb;
    VkPipelineLayout scene_layout, batch_layout, recon_layout;
    VkPipeline scene, batch, recon;
    VkDescriptorSetLayout batch_dsl, recon_dsl;
    VkDescriptorPool dpool;
    VkDescriptorSet batch_set, recon_set;
    VkCommandBuffer frame_cb, recon_cb;
} nt_pipes;

int nt_pipes_create(vkx *v, const char *shader_dir, int size, int batch, const nt_buffers *b, nt_pipes *p);
void nt_pipes_destroy(vkx *v, nt_pipes *p);
/* Record this frame's commands: render at time t, copy to b->frame, write the batch into b->x / b->y. */
int nt_record_frame(vkx *v, nt_pipes *p, const nt_buffers *b, uint32_t frame, float t);
/* Record (once) the reconstruction: b->w -> b->recon. */
int nt_record_recon(vkx *v, nt_pipes *p, const nt_buffers *b);

#endif
