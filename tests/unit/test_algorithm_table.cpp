// The tables of comm/algorithm_table.h against the names and the tag: every row's name parses back
// to it, every code decodes back to it within its collective, every algorithm a user can name
// belongs to some collective, and what may be asked for is the table less what the world lacks.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "comm/algorithm_table.h"
#include "comm/algorithms/algorithm_choice.h"
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
      CHECK(row.wire == wire_code(row.algorithm));
      CHECK(codes.insert(row.wire).second);
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

TEST_CASE("what may be asked for is the table less what the world lacks", "[algorithm_table]") {
  const Topology several_hosts{.size = 4, .hosts = 2};
  const Topology one_host{.size = 4, .hosts = 1, .shared_slots = true};
  for (CollectiveKind kind : kKinds)
    for (const AlgorithmRow& row : algorithm_table(kind)) {
      CAPTURE(kind_name(kind), algorithm_name(row.algorithm));
      CHECK(available(kind, Route::host, one_host).contains(row.algorithm));
      CHECK(available(kind, Route::host, several_hosts).contains(row.algorithm) == !row.one_host);
      CHECK(available(kind, Route::nccl, one_host).contains(row.algorithm) == !row.host_only);
    }
}
