/* examples/neural-texture/window.h — the --window mode: a GLFW window and a
 * swapchain on the application's device that shows the rendered frame and
 * the network's picture side by side, each frame. Built only when CMake found
 * GLFW (NT_HAVE_GLFW); otherwise nt_window_init says so. */
#ifndef NT_WINDOW_H
#define NT_WINDOW_H

#include "vk.h"

typedef struct nt_window nt_window;

/* Start GLFW and say which instance extensions a window surface needs.
 * 0 = ready; 1 = no window possible here (built without GLFW, no display,
 * no Vulkan presentation), with the reason printed. */
int nt_window_init(const char *const **ext, uint32_t *n);
/* Open a width x height window and its surface (v->surface) on v's instance,
 * before vkx_open_device. 0 = ready, 1 = failure (printed). */
int nt_window_open(nt_window **out, vkx *v, int width, int height);
/* Create the swapchain, after vkx_open_device. 0 / 1. */
int nt_window_swapchain(nt_window *w, vkx *v);
/* Show `left` | `right` (size x size RGBA8 buffers written by earlier,
 * finished submits; read with transfers) scaled to the window, and wait for
 * the copy. 0 = shown (or skipped: minimised, swapchain recreated), 1 =
 * failure (printed), 2 = the user closed the window. */
int nt_window_present(nt_window *w, vkx *v, const vkx_buffer *left, const vkx_buffer *right, int size);
/* Destroy the swapchain, the surface and the window; before vkx_close. */
void nt_window_close(nt_window *w, vkx *v);

#endif
