// Umbrella for the vocabulary layer.
#pragma once

#include "core/algorithm.hpp"
#include "core/bfloat16.hpp"
#include "core/bus_bandwidth.hpp"
#include "core/collective.hpp"
#include "core/communicator.hpp"
#include "core/config.hpp"
#include "core/data_type.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/floating_copy.hpp"
#include "core/half.hpp"
#include "core/log.hpp"
#include "core/reduce_op.hpp"
