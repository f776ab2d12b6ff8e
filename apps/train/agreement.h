// Every rank trains the same job: ranks given different settings or different data (an MPMD
// launch line, a per-rank script, a file that differs between hosts) would train different
// models and exit 0, or fail later with a collective mismatch that says nothing of the cause
// (issue #48 item 8). Before any step, each rank's configuration and data are compared with
// rank 0's, and the first difference is named on every rank.
#pragma once

#include <string>
#include <vector>

#include "apps/train/dataset.h"
#include "apps/train/trainer.h"
#include "comm/communicator.h"

namespace ringdp::train {

/// One thing every rank must have alike: `compared` decides, `shown` names it in the message
/// (a data set's rows and checksum are compared, its file name is only shown).
struct AgreedItem {
  std::string name, compared, shown;
};

/// Collective over `comm`. When some rank's item differs from rank 0's, every rank throws the
/// same Error, naming the first such item, rank 0's value and the first differing rank's.
void require_agreement(comm::Communicator& comm, const std::vector<AgreedItem>& items,
                       const std::string& what);

/// The settings that change what is trained: every training flag but the output paths,
/// --verbose and --timeout.
std::vector<AgreedItem> config_items(const TrainConfig& config);

/// The data set of `config` (synthetic, or --data's CSV), checked to be the same on every rank:
/// its rows and columns, and for --data a checksum of its values.
Dataset agreed_dataset(const TrainConfig& config, comm::Communicator& comm);

}  // namespace ringdp::train
