# free_port: a port for a torch rendezvous (MASTER_PORT) that no socket holds now: the kernel's
# pick for one bound to port 0. A random port from 20000-39999 was once taken (errno 98, "Address
# already in use", in a fresh-clone run): that range overlaps the ephemeral ports other
# connections get. Sourced by the tests that start a torch rendezvous (tests/cli/common.sh,
# tests/mpi/torch_join.sh, tests/torch/test_seed_fixed.sh).
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
