// Umbrella for the backend-neutral layer every backend builds on: call checking and descriptors,
// the schedule cache, and the step interpreter with its transport interface.
#pragma once

#include "runtime/call_check.hpp"
#include "runtime/call_descriptor.hpp"
#include "runtime/element_ops.hpp"
#include "runtime/interpreter.hpp"
#include "runtime/schedule_cache.hpp"
#include "runtime/validate.hpp"
