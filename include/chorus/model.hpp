// Umbrella for the cost model: fabrics (uniform alpha-beta, or a GPU topology priced per NCCL
// protocol), the schedule replay that prices any algorithm on them, predictions in nccl-tests'
// units, the alpha-beta fit behind host calibration, and the tuner. CPU tier: no CUDA needed.
#pragma once

#include "model/automatic.hpp"
#include "model/calibration.hpp"
#include "model/fabric.hpp"
#include "model/gpu_fabric.hpp"
#include "model/predict.hpp"
#include "model/protocol.hpp"
#include "model/simulate.hpp"
#include "model/tuner.hpp"
