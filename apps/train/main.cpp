// ringdp-train: data-parallel training under mpirun. With no flags, the seed's job:
// Linear(10 -> 1), MSE, SGD lr 0.01, 100 samples of 10 features per rank, 10 epochs.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "apps/train/agreement.h"
#include "apps/train/comm_hook_setup.h"
#include "apps/train/explain.h"
#include "apps/train/optimizer_setup.h"
#include "apps/train/trainer.h"
#include "comm/bootstrap/mpi_runtime.h"
#include "core/atomic_file.h"
#include "core/file_identity.h"
#include "core/settings.h"

using namespace ringdp;

namespace {
// CLI11's own range checks print the range's bounds in full (1.79e308 spelled out); these say
// what was expected in words.
CLI::Validator number_check(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end != '\0') return "'" + text + "' is not a number";
        // nan compares false with everything, so it would pass the sign test below.
        if (!std::isfinite(value)) return "'" + text + "' is not a finite number";
        if (value < 0 || (!allow_zero && value == 0))
          return "'" + text + "' must be " + (allow_zero ? "zero or positive" : "positive");
        return {};
      },
      allow_zero ? "NUMBER >= 0" : "NUMBER > 0");
}
const CLI::Validator kPositive = number_check(false);
// Whole numbers (epochs, samples, sizes): digits only, so 1e20 or 99999999999999999999 is refused
// here instead of wrapping or overflowing in CLI11's conversion.
CLI::Validator count_check(bool allow_zero) {
  return CLI::Validator(
      [allow_zero](std::string& text) -> std::string {
        constexpr size_t kMaxDigits = 12;  // up to 999,999,999,999: far past any real run
        if (text.empty() || text.size() > kMaxDigits ||
            text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not a whole number from " + (allow_zero ? "0" : "1") + " to 999999999999";
        if (!allow_zero && std::strtoll(text.c_str(), nullptr, 10) == 0)
          return "'" + text + "' must be positive";
        return {};
      },
      allow_zero ? "INTEGER >= 0" : "INTEGER > 0");
}
// CLI11 would wrap -1 to 2^64 - 1 for the unsigned seed.
const CLI::Validator kSeed(
    [](std::string& text) -> std::string {
      return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos
                 ? std::string()
                 : "'" + text + "' is not a non-negative integer";
    },
    "INTEGER >= 0");
const CLI::Validator kCount = count_check(false);
const CLI::Validator kCountOrZero = count_check(true);
// The collective timeout: at least a millisecond (the unit it is kept in) and at most
// comm::kMaxTimeout, past which a deadline of now + timeout would overflow the clock.
const CLI::Validator kTimeout(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      const double value = std::strtod(text.c_str(), &end);
      const double most = static_cast<double>(comm::kMaxTimeout.count());
      if (end == text.c_str() || *end != '\0' || !std::isfinite(value) || value < 0.001 || value > most)
        return "'" + text + "' is not a number of seconds from 0.001 to " +
               std::to_string(comm::kMaxTimeout.count());
      return {};
    },
    "SECONDS");
const CLI::Validator kNonNegative = number_check(true);
// The folder of a file written after training must be there before it, not found missing after.
const CLI::Validator kOutputFile(
    [](std::string& path) -> std::string {
      if (path.empty()) return "an empty path; name a file";
      const std::string problem = output_file_problem(path);
      return problem.empty() ? problem : "'" + path + "': " + problem;
    },
    "PATH");

// CLI11's IsMember would print "--resume: x not in {always,auto,never}"; this names the value and
// what each choice does.
const CLI::Validator kResumeMode(
    [](std::string& text) -> std::string {
      return text == "always" || text == "auto" || text == "never"
                 ? std::string()
                 : "'" + text +
                       "' is not a resume mode: expected always (the checkpoint must exist), auto "
                       "(resume if it exists, else start fresh) or never";
    },
    "MODE");

// DDP's bucket caps; a bucket closes once it reaches its cap (PyTorch's rule, docs/ddp.md).
void add_bucket_options(CLI::App& app, train::TrainConfig& config) {
  app.add_option("--bucket-mb", config.bucket_mb, "DDP gradient bucket capacity in MiB")->check(kPositive);
  app.add_option("--first-bucket-mb", config.first_bucket_mb,
                 "capacity of the first DDP bucket in MiB (PyTorch's 1 MiB; at most --bucket-mb)")
      ->check(kPositive);
  app.add_option("--uneven", config.uneven,
                 "data that does not split evenly over the ranks: pad (repeat samples, PyTorch's "
                 "DistributedSampler) or join (each sample once per epoch; docs/ddp.md)")
      ->check(CLI::IsMember({"pad", "join"}));
  app.add_flag("--find-unused-parameters", config.find_unused_parameters,
               "DDP finds the parameters each forward does not use (docs/ddp.md)");
}

// --comm-hook's value is checked at parse time, so a typo fails before MPI starts anything.
void add_comm_hook_option(CLI::App& app, train::TrainConfig& config) {
  app.add_option("--comm-hook", config.comm_hook,
                 "DDP communication hook: none (the all-reduce), fp16 or bf16 (cast, all-reduce, cast back), "
                 "powersgd:RANK[:START] (rank-RANK PowerSGD after START plain steps, default 2)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            try {
              train::parse_comm_hook(text);
              return "";
            } catch (const Error&) {
              return "'" + text + "' is not a comm hook: " + train::kCommHookForms;
            }
          },
          "HOOK"));
}

// An option with an optional value: a bare --resume (the flag it used to be) reads as always.
void add_resume_option(CLI::App& app, train::ResumeMode& resume) {
  app.add_option_function<std::string>(
         "--resume",
         [&resume](const std::string& mode) {
           // An explicit empty value gets past the validator, which CLI11 runs on non-empty values only.
           std::string checked = mode;
           if (mode.empty()) throw CLI::ValidationError("--resume", kResumeMode(checked));
           resume = mode == "always" ? train::ResumeMode::always
                    : mode == "auto" ? train::ResumeMode::automatic
                                     : train::ResumeMode::never;
         },
         "continue from --checkpoint. --resume (or --resume always): the checkpoint must exist; "
         "--resume auto: continue when it exists, else start at epoch 1 and say so (a job that may be "
         "requeued, e.g. sbatch --requeue, runs the same command each time); --resume never, or no "
         "--resume: start at epoch 1")
      ->expected(0, 1)
      ->default_str("always")
      ->option_text("[always|auto|never]")
      ->check(kResumeMode);
}

// Defaults that follow --optimizer: the class it names has its own (torch.optim.Adam and AdamW:
// lr 0.001; AdamW: weight decay 0.01), and the same run on PyTorch must end with the same
// parameters. SGD keeps lr 0.01: PyTorch 1.13's SGD has no default to follow.
void apply_optimizer_defaults(const CLI::App& app, train::TrainConfig& config) {
  if (app.count("--lr") == 0 && config.optimizer != "sgd") config.lr = 0.001;
  if (app.count("--weight-decay") == 0 && config.optimizer == "adamw") config.weight_decay = 0.01;
}

// --optimizer and the flags only it reads. --betas is "B1,B2", each in [0, 1) as PyTorch requires.
void add_optimizer_options(CLI::App& app, train::TrainConfig& config) {
  app.add_option(
         "--lr", config.lr,
         "learning rate (default 0.01 for sgd, 0.001 for adam and adamw as torch.optim.Adam and AdamW)")
      ->check(kPositive);
  app.add_option("--momentum", config.momentum, "SGD momentum")->check(number_check(true));
  app.add_option("--weight-decay", config.weight_decay,
                 "weight decay: sgd and adam add it times the parameter to the gradient (L2); adamw "
                 "multiplies the parameter by 1 - lr x weight decay (decoupled). Default 0; 0.01 for adamw, "
                 "as torch.optim.AdamW")
      ->check(number_check(true));
  app.add_option("--optimizer", config.optimizer,
                 "sgd, adam or adamw (torch.optim.SGD, Adam, AdamW; adamw's weight decay is decoupled)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return text == "sgd" || text == "adam" || text == "adamw"
                       ? std::string()
                       : "'" + text + "' is not an optimizer: expected sgd, adam or adamw";
          },
          "NAME"));
  app.add_option_function<std::string>(
         "--betas",
         [&config](const std::string& text) {
           const size_t comma = text.find(',');
           const auto beta = [&text](const std::string& part) {
             char* end = nullptr;
             const double value = std::strtod(part.c_str(), &end);
             if (part.empty() || *end != '\0' || !(value >= 0 && value < 1))
               throw CLI::ValidationError("--betas",
                                          "'" + text + "' is not two numbers B1,B2, each in [0, 1)");
             return value;
           };
           if (comma == std::string::npos)
             throw CLI::ValidationError("--betas", "'" + text + "' is not two numbers B1,B2, each in [0, 1)");
           config.beta1 = beta(text.substr(0, comma));
           config.beta2 = beta(text.substr(comma + 1));
           config.betas_given = true;
         },
         "adam/adamw: the moments' decay rates B1,B2 (default 0.9,0.999)")
      ->option_text("B1,B2");
  app.add_option_function<double>(
         "--eps",
         [&config](double eps) {
           config.eps = eps;
           config.eps_given = true;
         },
         "adam/adamw: added to the denominator after the square root (default 1e-08)")
      ->check(number_check(true));
  app.add_flag("--zero", config.zero,
               "ZeroRedundancyOptimizer: each rank keeps 1/N of the optimizer state; gradients are "
               "reduce-scattered, each rank steps its shard, parameters are all-gathered (docs/ddp.md)");
}

bool is_rank_zero() { return comm::launcher_rank() == 0; }

// The files a run reads and writes.
void add_file_options(CLI::App& app, train::TrainConfig& config) {
  app.add_option("--data", config.data_path, "numeric CSV, last column the target (default: synthetic data)");
  app.add_option("--checkpoint", config.checkpoint_path, "checkpoint file written by rank 0")
      ->check(kOutputFile);
  app.add_option("--save-every", config.save_every, "epochs between checkpoints")->check(kCount);
  add_resume_option(app, config.resume);
  app.add_option("--init", config.init_path, "initial parameters (JSON)");
  app.add_option("--export", config.export_path, "write final parameters (JSON) from rank 0")
      ->check(kOutputFile);
}

// What is wrong with the files named on the command line, or "".
std::string paths_problem(const CLI::App& app, const train::TrainConfig& config) {
  const std::vector<NamedPath> paths = {{"--data", config.data_path, false},
                                        {"--init", config.init_path, false},
                                        {"--checkpoint", config.checkpoint_path, true},
                                        {"--export", config.export_path, true}};
  for (const NamedPath& p : paths)
    if (app.count(p.flag) > 0 && p.path.empty())
      return p.flag + ": an empty path; name a file" +
             (p.flag == "--data" ? " (leave --data out to train on synthetic data)" : "");
  try {
    require_distinct_outputs(paths);
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

// Training, or under --explain one step told (of DDP with SGD, or with --zero of ZeRO).
int run_job(const train::TrainConfig& config, const std::shared_ptr<comm::Communicator>& communicator) {
  train::require_agreement(*communicator, train::config_items(config), "settings");
  train::check_optimizer_flags(config);
  RINGDP_CHECK(config.comm_hook == "none" || config.uneven != "join", "--comm-hook ", config.comm_hook,
               " does not work with --uneven join (a joined rank shadows the default all-reduce of each "
               "bucket, not a hook's collectives); use one or the other");
  if (!config.explain) return train::run_training(config, communicator);
  RINGDP_CHECK(!config.zero || config.uneven != "join",
               "--uneven join does not work with --zero (ZeRO's step "
               "communicates too, and a joined rank would not shadow it); use --uneven pad");
  if (config.uneven == "join") return train::run_explain_join(config, communicator);
  if (config.comm_hook != "none") return train::run_explain_hook(config, communicator);
  return config.zero ? train::run_explain_zero(config, communicator)
                     : train::run_explain(config, communicator);
}
// --backend ucx sets what carries host tensors; auto, mpi and nccl what carries CUDA tensors.
comm::CommOptions comm_options(const train::TrainConfig& config, double timeout_seconds) {
  comm::CommOptions options;
  options.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  options.backend = comm::parse_backend(config.backend == "ucx" ? "mpi" : config.backend);
  if (config.backend == "ucx") options.host_transport = comm::HostTransport::ucx;
  return options;
}
}  // namespace

int main(int argc, char** argv) {
  comm::install_terminate_handler("ringdp-train");
  train::TrainConfig config;
  std::string algo = "auto";
  double timeout = 300;
  CLI::App app{"ringdp-train: data-parallel training of a small regression model; launch with mpirun -np N"};
  app.option_defaults()->always_capture_default();
  app.add_option("--model", config.model, "linear or mlp")->check(CLI::IsMember({"linear", "mlp"}));
  app.add_option("--hidden", config.hidden, "MLP hidden sizes, e.g. --hidden 16,16")
      ->delimiter(',')
      ->check(kCount);
  app.add_option("--samples", config.samples, "synthetic samples per rank")->check(kCount);
  app.add_option("--features", config.features, "synthetic features per sample")->check(kCount);
  app.add_option("--batch-size", config.batch_size, "samples per rank per step (0: the whole shard)")
      ->check(kCountOrZero);
  app.add_option("--epochs", config.epochs, "passes over the data")->check(kCount);
  add_optimizer_options(app, config);
  app.add_option("--seed", config.seed, "seed of the data, the initial weights and the shuffling")
      ->check(kSeed);
  bool no_shuffle = false;
  app.add_flag("--no-shuffle", no_shuffle, "keep the data order fixed across epochs");
  app.add_option("--device", config.device, "cpu, cuda or auto (cuda when available)")
      ->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--backend", config.backend,
                 "auto, mpi, nccl (CUDA tensors) or ucx (host tensors; docs/ucx.md)")
      ->check(CLI::IsMember({"auto", "mpi", "nccl", "ucx"}));
  app.add_option("--algo", algo,
                 "all-reduce algorithm: auto, ring, recursive_doubling, rabenseifner, shared_memory, native, "
                 "or hierarchical (across hosts; host tensors)")
      ->check(CLI::IsMember(
          {"auto", "ring", "recursive_doubling", "rabenseifner", "shared_memory", "native", "hierarchical"}));
  add_bucket_options(app, config);
  add_file_options(app, config);
  app.add_option("--timeout", timeout, "seconds before a stuck collective ends the job")->check(kTimeout);
  app.add_flag("--verbose", config.verbose, "every rank reports");
  bool no_overlap = false;
  app.add_flag("--no-overlap", no_overlap,
               "start the gradient all-reduces only after backward has finished (the baseline that DDP's "
               "overlap beats)");
  add_comm_hook_option(app, config);
  app.add_flag("--explain", config.explain,
               "run one step and narrate it: broadcast, hooks, buckets, one gradient value through each "
               "all-reduce step, the average and the SGD update (host tensors)");
  bool help_env = false;
  app.add_flag("--help-env", help_env, "list the RINGDP_* environment variables and exit");
  try {
    app.parse(argc, argv);
    if (help_env) {
      if (is_rank_zero()) std::fputs(settings::help_text().c_str(), stdout);
      return 0;
    }
  } catch (const CLI::CallForHelp& e) {
    if (is_rank_zero()) std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    // Every rank parses the same arguments and fails the same way; one message is enough.
    if (is_rank_zero()) std::fprintf(stderr, "ringdp-train: error: %s\n", e.what());
    return 2;
  }
  // An empty path names no file: ignored, --data "" trained on synthetic data and --export ""
  // wrote nothing, exit 0. And no output may be an input or the other output, however spelled.
  const std::string path_problem = paths_problem(app, config);
  if (!path_problem.empty()) {
    if (is_rank_zero()) std::fprintf(stderr, "ringdp-train: error: %s\n", path_problem.c_str());
    return 2;
  }
  apply_optimizer_defaults(app, config);
  config.shuffle = !no_shuffle;
  config.overlap = !no_overlap;
  config.algorithm = comm::parse_algorithm(algo);
  try {
    auto communicator = comm::Communicator::init(comm_options(config, timeout));
    return run_job(config, communicator);
  } catch (const std::exception& e) {
    comm::fail_job("ringdp-train", e.what(), 1);
  }
}
