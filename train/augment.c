/* train/augment.c — where the trainer's loader augments
 * (loom_train_data.augment_on): parsing the choice, and resolving
 * LOOM_AUGMENT_AUTO once the backend exists. */
#include <string.h>

#include "loom/loader.h"
#include "train_impl.h"

int loom_augment_on_parse(const char *s) {
    if (!s || !strcmp(s, "auto")) return LOOM_AUGMENT_AUTO;
    if (!strcmp(s, "device")) return LOOM_AUGMENT_DEVICE;
    if (!strcmp(s, "host")) return LOOM_AUGMENT_HOST;
    return -1;
}

bool loom__train_device_augment(loom_ctx *ctx, const loom_train_data *dd, const loom_backend *be) {
    if (dd->augment_on == LOOM_AUGMENT_DEVICE) return true;
    if (dd->augment_on != LOOM_AUGMENT_AUTO) return false;
    bool capable = loom_loader_device_capable(dd->train_source ? dd->train_steps : NULL,
                                              dd->train_source ? dd->train_nsteps : 0);
    return capable && loom_backend_is_gpu(ctx, loom_backend_name(be));
}
