/* loom/loom.h — umbrella header: everything public. */
#ifndef LOOM_H
#define LOOM_H

#include "status.h"
#include "tensor.h"
#include "graph.h"
#include "backend.h"
#include "plan.h"
#include "rng.h"
#include "data.h"
#include "npy.h"
#include "sampler.h"
#include "source.h"
#include "transforms.h"
#include "shard.h"
#include "loader.h"
#include "optim.h"
#include "dist.h"
#include "checkpoint.h"
#include "nn.h"

#endif
