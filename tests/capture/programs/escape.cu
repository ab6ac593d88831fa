// A program whose descendants try to outlive its capture (tests/capture/test_containment.py).
// Usage: escape MODE DIR SECONDS. A survivor writes its pid (as the machine sees it: /proc/self
// of the host's /proc, also inside a PID namespace) to DIR/pids, sleeps SECONDS, then creates
// DIR/marker-PID: a marker proves a process outlived the capture.
//   child    a plain child; the program returns at once
//   setsid   a child that calls setsid(), clears LD_PRELOAD and double-forks, as a daemon does
//   stubborn the program and its child block SIGTERM and SIGALRM; the program never ends
//   forks    every process forks again, 8 generations deep or until fork() fails (RLIMIT_NPROC)
//   bigfile  writes 8 MiB to DIR/big
//   memory   asks cudaMalloc for 4 GiB
//   cpu      spins forever
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

__global__ void touch(int* p) { p[threadIdx.x] = 1; }

static const char* dir;
static int seconds;
static int ready[2];  // a survivor writes a byte once its pid is noted; the program waits for one

static void note_pid() {
  char self[64] = {0};
  if (readlink("/proc/self", self, sizeof self - 1) < 0) snprintf(self, sizeof self, "%d", getpid());
  char path[4096];
  snprintf(path, sizeof path, "%s/pids", dir);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0600);
  dprintf(fd, "%s\n", self);  // one write: concurrent writers never interleave a line
  close(fd);
}

static void linger() {
  note_pid();
  (void)!write(ready[1], "x", 1);
  sleep(seconds);
  char path[4096];
  snprintf(path, sizeof path, "%s/marker-%d", dir, getpid());
  close(open(path, O_WRONLY | O_CREAT, 0600));
  _exit(0);
}

static void wait_ready() {
  char c;
  (void)!read(ready[0], &c, 1);
}

static void block_stops() {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGTERM);
  sigaddset(&s, SIGALRM);
  sigprocmask(SIG_BLOCK, &s, nullptr);
}

int main(int argc, char** argv) {
  if (argc < 4) return 2;
  const char* mode = argv[1];
  dir = argv[2];
  seconds = atoi(argv[3]);
  if (pipe(ready) != 0) return 2;
  int* d;
  if (!strcmp(mode, "memory")) {
    if (cudaMalloc(&d, (size_t)4 << 30) != cudaSuccess) { puts("cudaMalloc failed"); return 3; }
    return 0;
  }
  cudaMalloc(&d, 256 * sizeof(int));
  touch<<<1, 256>>>(d);
  fflush(stdout);
  if (!strcmp(mode, "child")) {
    if (fork() == 0) linger();
    wait_ready();
  } else if (!strcmp(mode, "setsid")) {
    pid_t mid = fork();
    if (mid == 0) {
      setsid();
      unsetenv("LD_PRELOAD");
      if (fork() == 0) linger();
      _exit(0);
    }
    waitpid(mid, nullptr, 0);
    wait_ready();
  } else if (!strcmp(mode, "stubborn")) {
    block_stops();
    if (fork() == 0) linger();
    wait_ready();
    for (;;) pause();
  } else if (!strcmp(mode, "forks")) {
    pid_t program = getpid();
    for (int generation = 0; generation < 8; ++generation)
      if (fork() < 0) break;
    if (getpid() != program) linger();
    wait_ready();
  } else if (!strcmp(mode, "bigfile")) {
    char path[4096];
    snprintf(path, sizeof path, "%s/big", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    static char block[1 << 16];
    for (int i = 0; i < 128; ++i)
      if (write(fd, block, sizeof block) < 0) { puts("write failed"); return 4; }
    close(fd);
  } else if (!strcmp(mode, "cpu")) {
    for (volatile unsigned long i = 0;; ++i) {}
  }
  return 0;
}
