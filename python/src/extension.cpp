// chorus_torch._C: the backend class for torch.distributed, and host_all_reduce, which runs the same
// all_reduce on chorus's host backend (threads of this process) so tests can compare bits.
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chorus/host.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "backend.hpp"

namespace chorus_torch {

// Every tensor of `tensors` (one per virtual rank, float32, equal sizes) summed in place by a
// host::Team of tensors.size() ranks with `algorithm` ("automatic" or a chorus algorithm name).
void host_all_reduce(std::vector<at::Tensor> tensors, const std::string& algorithm) {
  const chorus::Algorithm chosen = chorus::bench::parse_algorithm(algorithm);
  for (const at::Tensor& t : tensors) {
    TORCH_CHECK(t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous() &&
                    t.numel() == tensors[0].numel(),
                "host_all_reduce: contiguous CPU float32 tensors of equal size");
  }
  chorus::host::Team team(static_cast<int>(tensors.size()));
  team.run([&](chorus::host::Comm& comm) {
    float* data = tensors[static_cast<std::size_t>(comm.rank())].data_ptr<float>();
    comm.all_reduce(data, data, static_cast<std::size_t>(tensors[0].numel()), chorus::ReduceOp::sum, chosen);
  });
}

}  // namespace chorus_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "chorus as a torch.distributed backend (CPU tensors, processes on one machine)";
  py::class_<chorus_torch::Backend, c10d::Backend, c10::intrusive_ptr<chorus_torch::Backend>>(m, "Backend")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::int64_t timeout_ms) {
             return c10::make_intrusive<chorus_torch::Backend>(store, rank, size, std::chrono::milliseconds(timeout_ms));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_ms"),
           py::call_guard<py::gil_scoped_release>());
  m.def("host_all_reduce", &chorus_torch::host_all_reduce, py::arg("tensors"), py::arg("algorithm") = "automatic",
        py::call_guard<py::gil_scoped_release>());
}
