// A chorus-p2p matrix as JSON, the same for the host and the CUDA tool: an unmeasured cell is null,
// never a number (docs/p2p.md, "JSON").
#pragma once

#include <nlohmann/json.hpp>

#include "p2p_matrix.hpp"

namespace p2p {

inline nlohmann::json matrix_json(const Matrix& m) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : m.cells) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& cell : row) values.push_back(cell ? nlohmann::json(*cell) : nlohmann::json(nullptr));
    rows.push_back(values);
  }
  return {{"title", m.title}, {"diagonal", m.diagonal}, {"values", rows}};
}

}  // namespace p2p
