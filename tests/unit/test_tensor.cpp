// tensor/: factories, copies, dtype conversions, views, random streams and error messages.
#include <catch2/catch.hpp>

#include <vector>

#include <sstream>

#include "kernels/device_memory.h"
#include "tensor/ops.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

using namespace ringdp;

TEST_CASE("factories fill shape, dtype and values", "[tensor]") {
  const Tensor z = zeros({2, 3}, DType::float64);
  CHECK(z.shape() == Shape{2, 3});
  CHECK(z.numel() == 6);
  CHECK(z.nbytes() == 48);
  for (double v : z.to_vector()) CHECK(v == 0.0);
  for (double v : ones({5}, DType::int32).to_vector()) CHECK(v == 1.0);
  for (double v : full({4}, 2.5, DType::bfloat16).to_vector()) CHECK(v == 2.5);
  const auto a = arange(7, DType::int64).to_vector();
  for (int i = 0; i < 7; ++i) CHECK(a[i] == i);
  CHECK(zeros({0, 3}).numel() == 0);
  CHECK(zeros({}).numel() == 1);  // a scalar
}

TEST_CASE("CPU storage is 64-byte aligned", "[tensor]") {
  for (int64_t n : {1, 3, 17, 1000}) {
    CHECK(reinterpret_cast<uintptr_t>(empty({n}, DType::bfloat16).data_ptr()) % 64 == 0);
  }
}

TEST_CASE("philox draws are reproducible and match known values", "[tensor][random]") {
  // Philox4x32-10 known-answer test from Random123 (counter 0, key 0).
  const auto lanes = random::philox4x32(0, 0);
  CHECK(lanes[0] == 0x6627e8d5u);
  CHECK(lanes[1] == 0xe169c58du);
  CHECK(lanes[2] == 0xbc57ac4cu);
  CHECK(lanes[3] == 0x9b00dbd8u);
  const Tensor a = randn({1000}, 42), b = randn({1000}, 42), c = randn({1000}, 43);
  CHECK(a.to_vector() == b.to_vector());
  CHECK(a.to_vector() != c.to_vector());
  double mean = 0, sq = 0;
  for (double v : randn({20000}, 7, 0.0, 1.0, DType::float64).to_vector()) {
    mean += v;
    sq += v * v;
  }
  mean /= 20000;
  CHECK(std::fabs(mean) < 0.03);
  CHECK(std::fabs(sq / 20000 - 1.0) < 0.05);
  for (double v : rand({5000}, 3, -2.0, 5.0, DType::float64).to_vector()) {
    CHECK(v >= -2.0);
    CHECK(v < 5.0);
  }
}

TEST_CASE("dtype conversions round as documented", "[tensor][dtype]") {
  const Tensor f = from_vector({1.5, -2.75, 3.9, 256.0, 257.0}, {5}, DType::float64);
  const auto as_int = f.to(DType::int32).to_vector();
  CHECK(as_int == std::vector<double>{1, -2, 3, 256, 257});
  // bfloat16 keeps 8 significant bits: 257 rounds to even (256), 3.9 to 3.90625.
  const auto as_bf16 = f.to(DType::bfloat16).to_vector();
  CHECK(as_bf16 == std::vector<double>{1.5, -2.75, 3.90625, 256.0, 256.0});
  CHECK(bfloat16(259.0f).bits == bfloat16(260.0f).bits);  // tie rounds to even mantissa
  CHECK(std::isnan(static_cast<float>(bfloat16(std::nanf("")))));
  const Tensor big = from_vector({9007199254740993.0}, {1}, DType::float64);
  CHECK(big.to(DType::int64).item() == 9007199254740992.0);
}

TEST_CASE("clone copies, views alias", "[tensor]") {
  Tensor t = arange(6, DType::float32).reshape({2, 3});
  Tensor c = t.clone();
  Tensor v = t.flat_view(2, 3);
  t.set_item(3, 100.0);
  CHECK(c.item(3) == 3.0);
  CHECK(v.item(1) == 100.0);
  CHECK(t.at({1, 0}) == 100.0);
  Tensor dst = zeros({2, 3}, DType::float64);
  dst.copy_from(t);
  CHECK(dst.to_vector() == std::vector<double>{0, 1, 2, 100, 4, 5});
}

TEST_CASE("errors name the bad value", "[tensor][errors]") {
  Tensor t = zeros({2, 3});
  REQUIRE_THROWS_AS(t.item(6), Error);
  REQUIRE_THROWS_WITH(t.item(6), Catch::Contains("index 6 out of range") && Catch::Contains("[2, 3]"));
  REQUIRE_THROWS_WITH(t.at({0, 3}), Catch::Contains("index 3 out of range for dimension 1"));
  REQUIRE_THROWS_WITH(t.data<double>(), Catch::Contains("tensor is float32, accessed as float64"));
  REQUIRE_THROWS_WITH(t.reshape({4, 2}), Catch::Contains("[2, 3] to [4, 2]"));
  Tensor other = zeros({3, 2});
  REQUIRE_THROWS_WITH(t.copy_from(other), Catch::Contains("destination [2, 3], source [3, 2]"));
  REQUIRE_THROWS_WITH(ops::add(t, zeros({2, 3}, DType::float64)),
                      Catch::Contains("dtype mismatch: float32 vs float64"));
  REQUIRE_THROWS_WITH(Device::parse("gpu1"), Catch::Contains("unknown device 'gpu1'"));
  REQUIRE_THROWS_WITH(parse_dtype("quarter"), Catch::Contains("unknown dtype 'quarter'") &&
                                                  Catch::Contains("float16, int8, uint8 or bool"));
  CHECK(parse_dtype("half") == DType::float16);
  CHECK(parse_dtype("bool") == DType::boolean);
  REQUIRE_THROWS_WITH(zeros({2, -1}), Catch::Contains("negative extent -1"));
  CHECK(Device::parse("cuda:3") == Device::cuda(3));
}

TEST_CASE("CUDA tensors without a device fail clearly", "[tensor][errors]") {
  if (kernels::cuda_device_count() > 0) {
    SUCCEED("a CUDA device is present; the cuda suite covers this path");
    return;
  }
  if (kernels::built_with_cuda()) {
    REQUIRE_THROWS_WITH(zeros({4}, DType::float32, Device::cuda(0)),
                        Catch::Contains("cuda:0 does not exist (0 visible)"));
  } else {
    REQUIRE_THROWS_WITH(zeros({4}, DType::float32, Device::cuda(0)),
                        Catch::Contains("ringdp was built without CUDA"));
  }
}

TEST_CASE("operator<< is readable", "[tensor]") {
  std::ostringstream out;
  out << arange(3, DType::int32);
  CHECK(out.str() == "tensor([0, 1, 2], shape=[3], dtype=int32, device=cpu)");
}

TEST_CASE("a borrowed tensor reads and writes the owner's memory and never frees it", "[tensor]") {
  // The torch backend reduces an at::Tensor in its own memory (issue #34): no copy on the way in.
  std::vector<float> owner = {1, 2, 3, 4, 5, 6};
  {
    Tensor view = Tensor::borrow(owner.data(), {2, 3}, DType::float32);
    REQUIRE(view.data_ptr() == owner.data());
    REQUIRE(view.nbytes() == 6 * sizeof(float));
    REQUIRE(view.at({1, 2}) == 6);
    view.set_item(0, 10);
    Tensor copy = view.clone();  // an owning copy: its own memory
    REQUIRE(copy.data_ptr() != owner.data());
  }  // the borrowed storage goes; the vector still owns its memory (ASan would see a double free)
  REQUIRE(owner[0] == 10);
  REQUIRE(Tensor::borrow(nullptr, {0}, DType::float32).numel() == 0);
  REQUIRE_THROWS_WITH(Tensor::borrow(nullptr, {3}, DType::float32),
                      Catch::StartsWith("cannot borrow 12 bytes at a null pointer"));
}
