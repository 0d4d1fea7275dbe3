/* core/backend_stats.c — a backend's host round-trip counters
 * (loom_backend_stats_get / _reset, loom/backend.h) and loom_plan_backend
 * (loom/plan.h), the way to them from a plan. The counters live in
 * struct loom_backend; each backend adds its transfers, submits and waits
 * where they happen (loom__stat_transfer, loom__stat_sync). */
#include "backend_impl.h"

void loom_backend_stats_get(const loom_backend *be, loom_backend_stats *out) {
    *out = be ? be->stats : (loom_backend_stats){0};
}

void loom_backend_stats_reset(loom_backend *be) {
    if (be) memset(&be->stats, 0, sizeof be->stats);
}

loom_backend *loom_plan_backend(const loom_plan *p) { return p->be; }
