// The kernels' index arithmetic, exhaustively over small sizes: what would corrupt data or hang on a GPU
// if it were off by one is checked here, on the CPU, where it cannot hang.
#include <catch2/catch.hpp>

#include <chorus/cuda/kernel/partition.hpp>
#include <chorus/cuda/kernel/rank_view.hpp>

#include <cstdint>
#include <set>
#include <vector>

namespace test_partition {

using namespace chorus::cuda::kernel;

TEST_CASE("pack_split covers the span and aligns the packs") {
  for (std::size_t bytes : {1u, 2u, 4u, 8u}) {
    const std::size_t per_pack = kPackBytes / bytes;
    for (std::uintptr_t misalignment = 0; misalignment < kPackBytes; misalignment += bytes) {
      for (std::size_t count = 0; count < 80; ++count) {
        const PackSplit s = pack_split(0x1000 + misalignment, true, count, bytes);
        INFO("element " << bytes << " misalignment " << misalignment << " count " << count);
        REQUIRE(s.head + s.packs * per_pack + s.tail == count);
        CHECK(s.tail < per_pack);
        if (s.packs > 0) CHECK((misalignment + s.head * bytes) % kPackBytes == 0);
        // As many packs as fit after the first boundary.
        const std::size_t to_boundary = misalignment == 0 ? 0 : (kPackBytes - misalignment) / bytes;
        if (count >= to_boundary) CHECK(s.packs == (count - to_boundary) / per_pack);
      }
    }
  }
  // Pointers that disagree, or a misalignment inside an element, get no vectors.
  CHECK(pack_split(0x1000, false, 100, 4).head == 100);
  CHECK(pack_split(0x1002, true, 100, 4).head == 100);
  CHECK(pack_split(0x1000, true, 100, 4).packs == 25);
}

TEST_CASE("packed_share tiles a range in whole packs") {
  for (std::size_t per_pack : {1u, 2u, 4u, 8u, 16u}) {
    for (std::size_t parts = 1; parts <= 9; ++parts) {
      for (std::size_t count = 0; count < 300; count += (count < 40 ? 1 : 7)) {
        std::size_t next = 5;  // a range that does not start at 0
        for (std::size_t part = 0; part < parts; ++part) {
          const Range share = packed_share(Range{5, count}, parts, part, per_pack);
          INFO("per_pack " << per_pack << " parts " << parts << " count " << count << " part " << part);
          REQUIRE(share.offset == next);
          CHECK((share.offset - 5) % per_pack == 0);
          if (part + 1 < parts) CHECK(share.count % per_pack == 0);
          next += share.count;
        }
        CHECK(next == 5 + count);
      }
    }
  }
}

TEST_CASE("two-shot rounds fit each block's segment for every size") {
  for (std::size_t per_pack : {2u, 4u, 8u, 16u}) {
    for (int ranks = 1; ranks <= kMaxRanks; ++ranks) {
      for (int blocks = 1; blocks <= 4; ++blocks) {
        const std::size_t segment = 64 * static_cast<std::size_t>(ranks) * per_pack + 8 * per_pack;
        const std::size_t per_round = two_shot_round_elements(segment, ranks, blocks, per_pack);
        REQUIRE(per_round > 0);
        for (std::size_t round = 0; round <= per_round; round += (round < 64 ? 1 : 13)) {
          for (int block = 0; block < blocks; ++block) {
            std::size_t used = 0;
            for (int chunk = 0; chunk < ranks; ++chunk) {
              const Range c = packed_share(Range{0, round}, static_cast<std::size_t>(ranks), static_cast<std::size_t>(chunk), per_pack);
              const Range s = packed_share(c, static_cast<std::size_t>(blocks), static_cast<std::size_t>(block), per_pack);
              used += (s.count + per_pack - 1) / per_pack * per_pack;
            }
            INFO("ranks " << ranks << " blocks " << blocks << " per_pack " << per_pack << " round " << round);
            REQUIRE(used <= segment);
          }
        }
      }
    }
  }
  CHECK(two_shot_round_elements(4 * 8 * 4, 8, 1, 4) == 0);  // no room: the caller must refuse the layout
}

TEST_CASE("segments are whole packs and never overlap") {
  for (std::size_t bytes : {1u, 2u, 4u, 8u}) {
    for (int blocks = 1; blocks <= kMaxBlocks; ++blocks) {
      const std::size_t segment = segment_elements(65536 + 48, blocks, bytes);
      CHECK(segment % (kPackBytes / bytes) == 0);
      CHECK(segment * static_cast<std::size_t>(blocks) * bytes <= 65536 + 48);
    }
  }
}

TEST_CASE("counters compare correctly across the 32-bit wrap") {
  CHECK(reached(5, 5));
  CHECK(reached(6, 5));
  CHECK_FALSE(reached(4, 5));
  CHECK(reached(0, 0xffffffffu));         // one step past the wrap
  CHECK(reached(3, 0xfffffffeu));
  CHECK_FALSE(reached(0xffffffffu, 0));   // one step short, across the wrap
  CHECK_FALSE(reached(0x7fffffffu, 0xffffffffu));
  CHECK(reached(0x7ffffffeu, 0xffffffffu));
}

TEST_CASE("FIFO slots follow each other across the 32-bit wrap only for power-of-two depths") {
  for (int depth : {2, 4, 8, 16}) {
    INFO("depth " << depth);
    CHECK(valid_fifo_depth(depth));
    CHECK(fifo_slot(0xffffffffu, depth) == depth - 1);  // the last step before the wrap
    CHECK(fifo_slot(0u, depth) == 0);                   // the next one: the following slot
  }
  // Depth 3: steps 2^32 - 1 and 2^32 (= 0) would both use slot 0, the second overwriting the first.
  CHECK(fifo_slot(0xffffffffu, 3) == 0);
  CHECK(fifo_slot(0u, 3) == 0);
  for (int depth : {0, 1, 3, 5, 6, 12, -4}) {
    INFO("depth " << depth);
    CHECK_FALSE(valid_fifo_depth(depth));
  }
}

TEST_CASE("LL flags are never 0 and alternate in parity, also across the wrap") {
  std::uint32_t flag = 0xfffffff0u;
  for (int i = 0; i < 40; ++i) {
    const std::uint32_t next = next_ll_flag(flag);
    INFO("after " << flag);
    CHECK(next != 0);
    CHECK((next & 1u) != (flag & 1u));
    flag = next;
  }
  CHECK(next_ll_flag(0) == 1);
  CHECK(next_ll_flag(0xffffffffu) == 2);
}

TEST_CASE("an LL line carries its data and flag in one 8-byte word") {
  for (std::uint32_t data : {0u, 1u, 0xdeadbeefu, 0xffffffffu}) {
    for (std::uint32_t flag : {1u, 2u, 0x80000000u, 0xffffffffu}) {
      const std::uint64_t line = ll_line(data, flag);
      CHECK(ll_data(line) == data);
      CHECK(ll_flag(line) == flag);
    }
  }
  CHECK(ll_lines(0) == 0);
  CHECK(ll_lines(1) == 1);
  CHECK(ll_lines(8) == 2);
  CHECK(ll_lines(9) == 3);
  CHECK(ll_unit_bytes(1) == 4);
  CHECK(ll_unit_bytes(8) == 8);
  CHECK(ll_capacity_lines(16384, 8) == 128);
}

TEST_CASE("ring pieces tile every chunk of every block once, each within a FIFO slot") {
  for (int ranks = 2; ranks <= kMaxRanks; ++ranks) {
    for (int blocks = 1; blocks <= 3; ++blocks) {
      for (std::size_t slot : {1u, 3u, 16u}) {
        for (std::size_t count = 0; count < 120; count += (count < 30 ? 1 : 11)) {
          std::vector<int> covered(count, 0);
          for (int block = 0; block < blocks; ++block) {
            const std::size_t pieces = ring_pieces(count, ranks, blocks, block, slot);
            REQUIRE(pieces >= 1);
            for (int chunk = 0; chunk < ranks; ++chunk) {
              for (std::size_t piece = 0; piece < pieces; ++piece) {
                const Range r = ring_piece(count, ranks, blocks, block, chunk, pieces, piece);
                INFO("ranks " << ranks << " blocks " << blocks << " slot " << slot << " count " << count);
                REQUIRE(r.count <= slot);
                REQUIRE(r.offset + r.count <= count);
                for (std::size_t i = r.offset; i < r.offset + r.count; ++i) ++covered[i];
                // The piece lies inside its ring chunk: the chunk decides each element's fold order.
                const Range whole = chorus::algo::chunk_range(count, static_cast<std::size_t>(ranks), static_cast<std::size_t>(chunk));
                if (r.count > 0) CHECK((r.offset >= whole.offset && r.offset + r.count <= whole.offset + whole.count));
              }
            }
          }
          for (std::size_t i = 0; i < count; ++i) REQUIRE(covered[i] == 1);
        }
      }
    }
  }
}

TEST_CASE("rounds cover a call in order") {
  for (std::size_t per_round : {1u, 5u, 64u}) {
    for (std::size_t count = 0; count < 200; ++count) {
      const std::size_t rounds = round_count(count, per_round);
      REQUIRE(rounds >= 1);
      std::size_t next = 0;
      for (std::size_t r = 0; r < rounds; ++r) {
        const Range range = round_range(count, per_round, r);
        REQUIRE(range.offset == next);
        REQUIRE(range.count <= per_round);
        if (count > 0) REQUIRE(range.count > 0);
        next += range.count;
      }
      CHECK(next == count);
    }
  }
}

TEST_CASE("staged collectives: block shares tile every round and fit their slot") {
  for (std::size_t per_pack : {1u, 2u, 4u, 8u, 16u}) {
    for (int parts = 1; parts <= kMaxRanks; ++parts) {
      for (int blocks = 1; blocks <= 4; ++blocks) {
        for (std::size_t segment_packs : {1u, 3u, 8u, 13u}) {
          const std::size_t slot = stage_slot_elements(segment_packs * per_pack, parts, per_pack);
          if (slot == 0) continue;
          CHECK(slot % per_pack == 0);
          CHECK(slot * static_cast<std::size_t>(parts) <= segment_packs * per_pack);  // the slots fit the segment
          for (std::size_t count = 0; count < 260; count += (count < 40 ? 1 : 11)) {
            const std::size_t rounds = round_count(count, slot * static_cast<std::size_t>(blocks));
            std::size_t next = 0;
            for (std::size_t r = 0; r < rounds; ++r) {
              for (int b = 0; b < blocks; ++b) {
                const Range share = staged_share(count, slot, blocks, b, r, per_pack);
                if (share.offset != next || share.count > slot) {
                  FAIL("per_pack " << per_pack << " parts " << parts << " blocks " << blocks << " slot " << slot << " count "
                                   << count << " round " << r << " block " << b << ": share " << share.offset << "+"
                                   << share.count << ", expected offset " << next << " and at most " << slot);
                }
                next += share.count;
              }
            }
            CHECK(next == count);
          }
        }
      }
    }
  }
}

TEST_CASE("a team the twin accepts has a staging slot for every collective") {
  // twin::Team and cuda::Team accept staging when two-shot gets a round for 8-byte elements; then the n
  // slots of reduce_scatter and all_to_all are never empty, for any element size.
  for (int ranks = 1; ranks <= kMaxRanks; ++ranks) {
    for (int blocks = 1; blocks <= kMaxBlocks; ++blocks) {
      for (std::size_t staging = 256; staging <= 64 * 1024; staging += 256) {
        if (two_shot_round_elements(segment_elements(staging, blocks, 8), ranks, blocks, 2) == 0) continue;
        for (std::size_t bytes : {1u, 2u, 4u, 8u}) {
          // A plain test, one assertion per case only when it fails: this loop is large for Catch.
          if (stage_slot_elements(segment_elements(staging, blocks, bytes), ranks, kPackBytes / bytes) == 0) {
            FAIL("no slot: ranks " << ranks << " blocks " << blocks << " staging " << staging << " element " << bytes);
          }
        }
      }
    }
  }
}

TEST_CASE("ring collectives: pieces tile each block and fit a slot") {
  for (std::size_t slot : {1u, 4u, 16u}) {
    for (int blocks = 1; blocks <= 5; ++blocks) {
      for (std::size_t count = 0; count < 150; ++count) {
        std::size_t next = 0;
        for (int b = 0; b < blocks; ++b) {
          const std::size_t pieces = ring_block_pieces(count, blocks, b, slot);
          REQUIRE(pieces >= 1);
          for (std::size_t s = 0; s < pieces; ++s) {
            const Range piece = ring_block_piece(count, blocks, b, pieces, s);
            INFO("slot " << slot << " blocks " << blocks << " count " << count << " block " << b << " piece " << s);
            REQUIRE(piece.offset == next);
            REQUIRE(piece.count <= slot);
            next += piece.count;
          }
        }
        CHECK(next == count);
      }
    }
  }
}

TEST_CASE("ring reduce_scatter and all_gather: each step gets what the previous rank sent, in the host's order") {
  for (int n = 2; n <= kMaxRanks; ++n) {
    // What position p sends at step k (0: its first send; k > 0: what it received at step k - 1).
    const auto scatter_sent = [n](int p, int k) {
      return k == 0 ? ring_scatter_send_position(p, n) : ring_scatter_recv_position(p, k - 1, n);
    };
    const auto gather_sent = [n](int p, int k) { return k == 0 ? p : ring_gather_block_position(p, k - 1, n); };
    for (int p = 0; p < n; ++p) {
      const int prev = (p + n - 1) % n;
      std::set<int> gathered;
      for (int k = 0; k < n - 1; ++k) {
        INFO("ranks " << n << " position " << p << " step " << k);
        REQUIRE(ring_scatter_recv_position(p, k, n) == scatter_sent(prev, k));
        REQUIRE(ring_gather_block_position(p, k, n) == gather_sent(prev, k));
        gathered.insert(ring_gather_block_position(p, k, n));
      }
      CHECK(ring_scatter_recv_position(p, n - 2, n) == p);  // the last step finishes this position's own block
      CHECK(gathered.size() == static_cast<std::size_t>(n - 1));
      CHECK(gathered.count(p) == 0);
    }
    // Block q is folded by positions q+1, q+2, ..., q: algo::ring_reduce_scatter's order.
    for (int q = 0; q < n; ++q) {
      std::vector<int> folders = {(q + 1) % n};  // the first send
      int holder = (q + 1) % n;
      for (int k = 0; k < n - 1; ++k) {
        const int next = (holder + 1) % n;
        REQUIRE(ring_scatter_recv_position(next, k, n) == q);
        folders.push_back(next);
        holder = next;
      }
      for (int i = 0; i < n; ++i) CHECK(folders[static_cast<std::size_t>(i)] == (q + 1 + i) % n);
    }
  }
}

}  // namespace test_partition
