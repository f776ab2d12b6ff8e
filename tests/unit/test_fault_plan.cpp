// RINGDP_FAULT's grammar (comm/execution/fault.h): what a valid plan asks of which rank at which
// collective, and an Error quoting the offending text for every malformed form, so a typo in a
// drill is refused instead of silently rehearsing nothing.
#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "comm/execution/fault.h"
#include "core/error.h"

using namespace ringdp;
using comm::FaultPlan;

TEST_CASE("an empty plan asks nothing of anyone", "[fault]") {
  for (const char* text : {"", ",", ",,"}) {
    CAPTURE(text);
    const FaultPlan plan = FaultPlan::parse(text);
    REQUIRE(plan.empty());
    const comm::FaultAction none = plan.action(0, 0);
    REQUIRE_FALSE((none.kill || none.skip || none.corrupt || none.delay_ms || none.count_delta));
  }
}

TEST_CASE("each fault kind reaches its rank at its collective and nowhere else", "[fault]") {
  const FaultPlan plan = FaultPlan::parse(
      "delay:rank=1:op=10:ms=2000,skip:rank=2:op=5,count:rank=1:op=3:delta=-1,"
      "corrupt:rank=0:op=4,,kill:op=7:rank=3");
  REQUIRE_FALSE(plan.empty());
  REQUIRE(plan.action(1, 10).delay_ms == 2000);
  REQUIRE(plan.action(2, 5).skip);
  REQUIRE(plan.action(1, 3).count_delta == -1);
  REQUIRE(plan.action(0, 4).corrupt);
  REQUIRE(plan.action(3, 7).kill);  // keys in either order
  // The same collective on another rank, and the next collective on the same rank: nothing.
  for (auto [rank, op] : {std::pair{0, 10}, {1, 11}, {1, 5}, {2, 4}, {0, 3}, {2, 7}, {3, 6}}) {
    CAPTURE(rank, op);
    const comm::FaultAction a = plan.action(rank, static_cast<uint64_t>(op));
    REQUIRE_FALSE((a.kill || a.skip || a.corrupt || a.delay_ms || a.count_delta));
  }
}

TEST_CASE("faults on the same rank and collective combine", "[fault]") {
  const comm::FaultAction a = FaultPlan::parse("delay:rank=0:op=2:ms=5,corrupt:rank=0:op=2").action(0, 2);
  REQUIRE(a.delay_ms == 5);
  REQUIRE(a.corrupt);
}

TEST_CASE("every malformed plan is an Error quoting what is wrong", "[fault]") {
  // {plan, text the message must contain}
  const std::pair<const char*, const char*> cases[] = {
      {"explode:rank=1:op=2", "unknown fault 'explode'"},
      {"Skip:rank=1:op=2", "unknown fault 'Skip'"},
      {"rank=1:op=2", "unknown fault 'rank=1'"},
      {"skip:rank=1:op", "'op' in 'skip:rank=1:op' is not key=value"},
      {"skip:rank=1:op=2:when=3", "unknown key 'when' in 'skip:rank=1:op=2:when=3'"},
      {"skip:rank=one:op=2", "'skip:rank=one:op=2': 'one' is not an integer"},
      {"skip:rank=1:op=2x", "'2x' is not an integer"},
      {"skip:rank=:op=2", "'skip:rank=:op=2': '' is not an integer"},
      {"delay:rank=1:op=2:ms=1.5", "'1.5' is not an integer"},
      {"skip:op=2", "'skip:op=2' needs rank=R and op=K"},
      {"skip:rank=2", "'skip:rank=2' needs rank=R and op=K"},
      {"kill", "'kill' needs rank=R and op=K"},
      {"count:rank=1:op=3:delta=2", "delta=2 would change nothing"},
      {"count:rank=1:op=3", "delta=0 would change nothing"},
      {"skip:rank=1:op=2,skip:rank=1:op=x", "'skip:rank=1:op=x': 'x' is not an integer"},
      // Numbers that do not fit where they go would otherwise wrap to another rank or collective.
      {"skip:rank=4294967297:op=2", "'4294967297' is out of range"},
      {"skip:rank=-1:op=2", "'-1' is out of range"},
      {"skip:rank=1:op=-1", "'-1' is out of range"},
      {"skip:rank=1:op=99999999999999999999", "'99999999999999999999' is out of range"},
      {"delay:rank=1:op=2:ms=-5", "'-5' is out of range"},
      // Drills that would rehearse nothing, or not the one meant.
      {"delay:rank=1:op=2", "a delay needs ms=M with M >= 1"},
      {"delay:rank=1:op=2:ms=0", "a delay of 0 ms would rehearse nothing"},
      {"skip:rank=1:op=2:rank=0", "key 'rank' given twice in 'skip:rank=1:op=2:rank=0'"},
      {"kill:rank=1:op=2:op=3", "key 'op' given twice"},
  };
  for (const auto& [text, expected] : cases) {
    CAPTURE(text);
    REQUIRE_THROWS_AS(FaultPlan::parse(text), Error);
    REQUIRE_THROWS_WITH(FaultPlan::parse(text), Catch::Contains(std::string("RINGDP_FAULT: ")) &&
                                                    Catch::Contains(std::string(expected)));
  }
}

TEST_CASE("a fault for a rank the job does not have is refused", "[fault]") {
  const FaultPlan plan = FaultPlan::parse("kill:rank=7:op=3");
  plan.check_ranks(8);
  REQUIRE_THROWS_WITH(plan.check_ranks(2),
                      Catch::Contains("RINGDP_FAULT: a fault for rank 7, but this job has 2 ranks (0..1)"));
}
