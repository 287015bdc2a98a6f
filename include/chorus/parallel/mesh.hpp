// Mesh: the world's ranks laid out on a grid of named dimensions (docs/mesh.md). Pure arithmetic:
// rank <-> coordinates and the group listing of each dimension; MeshComms (mesh_comms.hpp) turns
// the groups into communicators.
//
// Dimensions are listed fastest first, so the first one holds neighbouring ranks: Mesh::megatron
// gives tp, dp, pp (Megatron's "tp-dp-pp": global = tp + dp*t + pp*t*d), which keeps a tensor-
// parallel group inside a node. PyTorch's DeviceMesh lists dimensions slowest first (row-major):
// its (dp=2, tp=4) mesh is Mesh({{"tp", 4}, {"dp", 2}}) here.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

struct MeshDim {
  std::string name;
  int size = 1;
};

class Mesh {
 public:
  explicit Mesh(std::vector<MeshDim> fastest_first) : dims_(std::move(fastest_first)) {
    if (dims_.empty()) throw invalid("a mesh needs at least one dimension");
    long long world = 1;
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      if (dims_[d].name.empty()) throw invalid("dimension ", d, " has no name");
      if (dims_[d].size < 1) throw invalid("dimension '", dims_[d].name, "' has size ", dims_[d].size);
      for (std::size_t e = 0; e < d; ++e) {
        if (dims_[e].name == dims_[d].name) throw invalid("dimension '", dims_[d].name, "' appears twice");
      }
      world *= dims_[d].size;
      if (world > std::numeric_limits<int>::max()) throw invalid("the mesh has more ranks than an int holds");
    }
    world_ = static_cast<int>(world);
  }

  // Megatron's layout for `world` ranks: tp fastest, then dp = world / (tp * pp), then pp.
  static Mesh megatron(int world, int tp, int pp) {
    if (world < 1 || tp < 1 || pp < 1 || world % tp != 0 || (world / tp) % pp != 0) {
      throw invalid("world ", world, " is not divisible into tp ", tp, " x pp ", pp);
    }
    return Mesh({{"tp", tp}, {"dp", world / tp / pp}, {"pp", pp}});
  }

  int world_size() const { return world_; }
  const std::vector<MeshDim>& dims() const { return dims_; }
  int size(const std::string& dim) const { return dims_[index_of(dim)].size; }

  std::size_t index_of(const std::string& dim) const {
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      if (dims_[d].name == dim) return d;
    }
    throw invalid("no dimension named '", dim, "'");
  }

  // Coordinates of `rank`, one per dimension, fastest first.
  std::vector<int> coordinates(int rank) const {
    check_rank(rank);
    std::vector<int> coords(dims_.size());
    for (std::size_t d = 0; d < dims_.size(); ++d) {
      coords[d] = rank % dims_[d].size;
      rank /= dims_[d].size;
    }
    return coords;
  }
  int coordinate(int rank, const std::string& dim) const { return coordinates(rank)[index_of(dim)]; }

  int rank_of(const std::vector<int>& coords) const {
    if (coords.size() != dims_.size()) throw invalid(coords.size(), " coordinates for ", dims_.size(), " dimensions");
    int rank = 0;
    for (std::size_t d = dims_.size(); d-- > 0;) {
      if (coords[d] < 0 || coords[d] >= dims_[d].size) {
        throw invalid("coordinate ", coords[d], " out of range for dimension '", dims_[d].name, "' of size ",
                      dims_[d].size);
      }
      rank = rank * dims_[d].size + coords[d];
    }
    return rank;
  }

  // Which group of `dim` holds `rank`: the other coordinates read as one number, fastest first, so
  // groups are numbered in the order Megatron lists them. It is the colour for comm.split.
  int group_index(int rank, const std::string& dim) const {
    const std::size_t along = index_of(dim);
    const std::vector<int> coords = coordinates(rank);
    int index = 0;
    for (std::size_t d = dims_.size(); d-- > 0;) {
      if (d != along) index = index * dims_[d].size + coords[d];
    }
    return index;
  }
  int group_count(const std::string& dim) const { return world_ / size(dim); }

  // The ranks of every group of `dim`, groups by group_index, members by their coordinate along dim.
  std::vector<std::vector<int>> groups(const std::string& dim) const {
    std::vector<std::vector<int>> listing(static_cast<std::size_t>(group_count(dim)));
    for (int rank = 0; rank < world_; ++rank) listing[static_cast<std::size_t>(group_index(rank, dim))].push_back(rank);
    return listing;
  }
  std::vector<int> group_of(int rank, const std::string& dim) const {
    return groups(dim)[static_cast<std::size_t>(group_index(rank, dim))];
  }

 private:
  template <class... Parts>
  static Error invalid(const Parts&... parts) {
    return Error(ErrorCode::invalid_argument, chorus::detail::concat("chorus::parallel::Mesh: ", parts...));
  }
  void check_rank(int rank) const {
    if (rank < 0 || rank >= world_) throw invalid("rank ", rank, " is outside a mesh of ", world_, " ranks");
  }

  std::vector<MeshDim> dims_;
  int world_ = 1;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
