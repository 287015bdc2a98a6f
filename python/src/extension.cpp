// chorus_torch._C: the backend class for torch.distributed, and host_all_reduce, which runs the same
// all_reduce on chorus's host backend (threads of this process) so tests can compare bits.
#include <torch/extension.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chorus/host.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend.hpp"
#include "transports.hpp"

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

// The backend of one process group, on the transport named ("shm", or "mpi" in a build with MPI).
c10::intrusive_ptr<Backend> make_backend(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                                         std::int64_t timeout_ms, const std::string& transport,
                                         const std::vector<std::int64_t>& global_ranks) {
  const long bound = std::clamp<long>(static_cast<long>(timeout_ms), 1L, chorus::env::kMaxTimeoutMs);
  std::unique_ptr<Transport> made;
  LinkFactory links;  // mpi: none, point-to-point stays on the group's worker (docs/torch.md)
  try {
    if (transport == "shm") {
      made = shm_transport(store, rank, size, bound);
      links = shm_links(store, rank);
#ifdef CHORUS_TORCH_WITH_MPI
    } else if (transport == "mpi") {
      made = mpi_transport(rank, size, global_ranks);
#endif
    } else {
      std::rethrow_exception(backend_error("chorus: transport '" + transport + "' is not in this build (" +
                                           (kHasMpi ? "shm, mpi" : "shm; mpi needs a build with MPI: docs/torch.md") + ")"));
    }
  } catch (const chorus::Error& e) {
    std::rethrow_exception(backend_error(e.what()));
  }
  (void)global_ranks;
  return c10::make_intrusive<Backend>(std::move(made), rank, size, std::chrono::milliseconds(timeout_ms),
                                      std::move(links));
}

}  // namespace chorus_torch

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "chorus as a torch.distributed backend (CPU tensors, processes on one machine)";
  py::class_<chorus_torch::Backend, c10d::Backend, c10::intrusive_ptr<chorus_torch::Backend>>(m, "Backend")
      .def(py::init(&chorus_torch::make_backend), py::arg("store"), py::arg("rank"), py::arg("size"),
           py::arg("timeout_ms"), py::arg("transport"), py::arg("global_ranks"),
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("transport", &chorus_torch::Backend::transport);
  m.attr("has_mpi") = chorus_torch::kHasMpi;
#ifdef CHORUS_TORCH_WITH_MPI
  m.def("finalize_mpi", &chorus_torch::finalize_mpi);
#else
  m.def("finalize_mpi", [] {});
#endif
  m.def("host_all_reduce", &chorus_torch::host_all_reduce, py::arg("tensors"), py::arg("algorithm") = "automatic",
        py::call_guard<py::gil_scoped_release>());
}
