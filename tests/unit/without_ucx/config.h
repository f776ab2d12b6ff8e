// This build's config.h with UCX taken away: what comm/world/store_discovery.cpp compiles to in a
// build without libucx-dev, for tests/unit/test_store_bootstrap.cpp's case of it (meson builds
// that one file against this header, first on its include path). Nothing else changes, so the
// rest of the library, built with UCX, links beside it.
#pragma once
#include_next "config.h"
#undef RINGDP_HAVE_UCX
#define RINGDP_HAVE_UCX 0
