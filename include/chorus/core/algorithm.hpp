// The public algorithm selector for all_reduce (other collectives pick their pattern internally).
#pragma once

namespace chorus {

enum class Algorithm { automatic, ring, tree, halving_doubling, one_shot, two_shot };

inline const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::automatic: return "automatic";
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::halving_doubling: return "halving_doubling";
    case Algorithm::one_shot: return "one_shot";
    case Algorithm::two_shot: return "two_shot";
  }
  return "unknown";
}

}  // namespace chorus
