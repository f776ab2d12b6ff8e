// The tables of comm/algorithm_table.h against the names and the tag: every row's name parses back
// to it, every code decodes back to it within its collective, and every algorithm a user can name
// belongs to some collective. (That codes differ within a collective is a static_assert; what a
// world or route may ask for is tested against fixed sets in test_algorithm_choice.cpp.)
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "comm/algorithm_table.h"
#include "comm/transport/envelope.h"

using namespace ringdp;
using namespace ringdp::comm;

namespace {
constexpr CollectiveKind kKinds[] = {
    CollectiveKind::all_reduce, CollectiveKind::reduce,         CollectiveKind::broadcast,
    CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::barrier,
    CollectiveKind::send,       CollectiveKind::recv,           CollectiveKind::gather,
    CollectiveKind::scatter,    CollectiveKind::all_to_all};
}  // namespace

TEST_CASE("each row's name parses back to it and its code decodes back to it", "[algorithm_table]") {
  for (CollectiveKind kind : kKinds) {
    CAPTURE(kind_name(kind));
    std::set<int> codes;
    for (const AlgorithmRow& row : algorithm_table(kind)) {
      CAPTURE(algorithm_name(row.algorithm));
      CHECK(parse_algorithm(algorithm_name(row.algorithm)) == row.algorithm);
      codes.insert(row.wire);
      CHECK(algorithm_of_wire(kind, row.wire) == row.algorithm);
      // What a report says of a message of that collective by that algorithm (send and recv
      // name none: they have one).
      if (kind == CollectiveKind::send || kind == CollectiveKind::recv) continue;
      const std::string text =
          describe_tag(encode_tag(kind, DType::float32, ReduceOp::sum, row.algorithm, 7, 16));
      CHECK_THAT(text, Catch::EndsWith(std::string(algorithm_name(row.algorithm)) + ")"));
    }
    CHECK(codes.count(wire_code(Algorithm::native)) == 1);  // every collective has the library's own
  }
}

TEST_CASE("every algorithm a user can name belongs to a collective", "[algorithm_table]") {
  std::set<Algorithm> named;
  for (CollectiveKind kind : kKinds)
    for (const AlgorithmRow& row : algorithm_table(kind)) named.insert(row.algorithm);
  for (const char* name : {"ring", "recursive_doubling", "tree", "native", "hierarchical", "rabenseifner",
                           "shared_memory", "pairwise", "chain", "dissemination"}) {
    CAPTURE(name);
    CHECK(named.count(parse_algorithm(name)) == 1);
  }
  CHECK(named.count(Algorithm::automatic) == 0);  // auto chooses among the rows; it is none of them
}
