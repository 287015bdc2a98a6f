// MeshComms: one sub-communicator per mesh dimension, split from the world communicator
// (docs/mesh.md). Building it is collective: every rank of `world` constructs one with the same
// mesh, and it splits once per dimension in the mesh's order (as new_group/ncclCommSplit must be
// called by every rank in the same order). Colour = the group's index, key = the coordinate along
// the dimension, so rank i of a sub-communicator is the member with coordinate i.
#pragma once

#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../core/communicator.hpp"
#include "../core/config.hpp"
#include "../core/error.hpp"
#include "mesh.hpp"

CHORUS_NAMESPACE_BEGIN namespace parallel {

template <class Comm>
class MeshComms {
  static_assert(is_communicator_v<Comm>, "chorus::parallel::MeshComms needs a chorus communicator");

 public:
  MeshComms(Comm& world, Mesh mesh) : mesh_(std::move(mesh)), rank_(world.rank()) {
    if (world.size() != mesh_.world_size()) {
      throw make_error(ErrorCode::invalid_argument, "parallel::MeshComms", world.rank(), "the mesh has ",
                       mesh_.world_size(), " ranks but the communicator has ", world.size());
    }
    for (const MeshDim& dim : mesh_.dims()) {
      comms_.push_back(world.split(mesh_.group_index(rank_, dim.name), mesh_.coordinate(rank_, dim.name)));
    }
  }

  const Mesh& mesh() const { return mesh_; }
  int rank() const { return rank_; }  // in the world communicator
  std::vector<int> coordinates() const { return mesh_.coordinates(rank_); }

  // The communicator of this rank's group along `dim`: its size is the dimension's size.
  Comm& operator[](const std::string& dim) { return comms_[mesh_.index_of(dim)]; }

 private:
  Mesh mesh_;
  int rank_;
  std::vector<Comm> comms_;
};

}  CHORUS_NAMESPACE_END  // namespace chorus::parallel
