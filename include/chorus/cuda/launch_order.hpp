// How a device communicator orders each launch after its previous one, captured into a CUDA graph or not.
//
// Outside capture a launch waits, on its stream, for the communicator's order event (recorded after every
// eager launch), so calls on different streams never overlap on the communicator's shared memory.
// During capture that wait is not allowed: a capture may not depend on work outside it (CUDA refuses the
// wait with cudaErrorStreamCaptureIsolation and loses the whole capture). So captured launches keep their
// own event, and the first launch of a capture waits on the host, bounded, for the eager work before it;
// later launches of the same capture wait on the captured event, an edge inside the graph. The graph's
// replays are then ordered with the communicator's other calls by the streams the user launches them on,
// as NCCL's are: launch a graph and the eager calls around it on one stream (or order them with events).
#pragma once

#include <cstdint>
#include <vector>

#include "../core/config.hpp"
#include "kernel/rank_view.hpp"
#include "launch_wait.hpp"

CHORUS_NAMESPACE_BEGIN namespace cuda {

// One launch group's order: the eager event, and the event of its launches in the current capture.
template <class Device>
struct LaunchOrder {
  typename Device::Event eager{};     // recorded after every launch outside capture
  typename Device::Event captured{};  // recorded after every launch inside a capture (made at the first)
  std::uint64_t capture = 0;          // the capture sequence of `captured`'s latest record

  // Before a launch on `stream`: orders it after the previous launch; returns the event to record after it.
  // `records`: the ranks' timeout records, for the host wait's bound (launch_wait.hpp).
  typename Device::Event before(const Device& device, typename Device::Stream stream,
                                const std::vector<const kernel::TimeoutRecord*>& records, const char* call, int rank) {
    const std::uint64_t now = device.capture_id(stream);
    if (now == 0) {
      device.stream_wait(stream, eager, call, rank);
      return eager;
    }
    if (now == capture) {
      device.stream_wait(stream, captured, call, rank);
    } else {
      [[maybe_unused]] const typename Device::RelaxedCapture relaxed;  // the host wait and event creation are not part of the capture
      if (captured == typename Device::Event{}) captured = device.create_event(call, rank);
      wait_for_work<Device>({{device, eager, rank}}, records, call);
      capture = now;
    }
    return captured;
  }

  void destroy(const Device& device) noexcept {
    if (eager != typename Device::Event{}) device.destroy_event(eager);
    if (captured != typename Device::Event{}) device.destroy_event(captured);
    eager = captured = typename Device::Event{};
    capture = 0;
  }
};

}  CHORUS_NAMESPACE_END  // namespace chorus::cuda
