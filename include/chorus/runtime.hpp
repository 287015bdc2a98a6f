// Umbrella for the backend-neutral layer every backend builds on: call checking and descriptors,
// the schedule cache, the step interpreter with its transport interface, and what records calls
// (flight recorder, desync summary, JSON dump, step trace). nvtx_range.hpp is opt-in.
#pragma once

#include "runtime/call_check.hpp"
#include "runtime/collective_front.hpp"
#include "runtime/call_descriptor.hpp"
#include "runtime/call_record.hpp"
#include "runtime/desync_summary.hpp"
#include "runtime/element_ops.hpp"
#include "runtime/flight_record_json.hpp"
#include "runtime/flight_recorder.hpp"
#include "runtime/interpreter.hpp"
#include "runtime/schedule_cache.hpp"
#include "runtime/step_trace.hpp"
#include "runtime/validate.hpp"
