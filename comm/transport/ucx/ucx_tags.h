// How ringdp's tags map onto UCP's 64-bit tags (comm/transport/ucx/ucx_transport.h): the top bit
// says a user's send/recv, the next 31 carry ringdp's tag (comm/transport/envelope.h; a user's
// less kUserTagBase), the low 32 the sender's rank. A collective's receive matches the next
// message from its peer whatever ringdp tag it carries (the envelope check then compares it);
// a user's receive matches the tag it names. Departure notices (comm/world/ucx_departures.h) take
// the user bit with all 31 tag bits set, which no user tag reaches (at most 2^30 - 1 there) and
// no collective's receive (user bit clear) can match.
#pragma once

#include <cstdint>

#include "comm/transport/envelope.h"
#include "config.h"

#if RINGDP_HAVE_UCX
#include <ucp/api/ucp.h>

namespace ringdp::comm {

constexpr ucp_tag_t kUserBit = ucp_tag_t{1} << 63;
constexpr ucp_tag_t kRankMask = 0xFFFFFFFFull;
constexpr ucp_tag_t kTagMask = ucp_tag_t{0x7FFFFFFF} << 32;
/// A notice's receive from any rank.
constexpr ucp_tag_t kNoticeMask = kUserBit | kTagMask;

/// ringdp's `tag` sent by rank `sender`.
inline ucp_tag_t wire_tag(int tag, int sender) {
  const bool user = tag >= kUserTagBase;
  const ucp_tag_t bits = static_cast<ucp_tag_t>(user ? tag - kUserTagBase : tag) & 0x7FFFFFFFull;
  return (user ? kUserBit : 0) | bits << 32 | static_cast<ucp_tag_t>(static_cast<uint32_t>(sender));
}

/// The ringdp tag a wire tag carries.
inline int ringdp_tag(ucp_tag_t wire) {
  const int bits = static_cast<int>((wire & kTagMask) >> 32);
  return (wire & kUserBit) ? bits + kUserTagBase : bits;
}

/// A departure notice sent by rank `sender`.
inline ucp_tag_t notice_tag(int sender) {
  return kUserBit | kTagMask | static_cast<ucp_tag_t>(static_cast<uint32_t>(sender));
}

}  // namespace ringdp::comm
#endif
