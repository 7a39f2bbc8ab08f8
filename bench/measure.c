/*
 * measure: runs a command and prints "WALL_SECONDS MAXRSS_KB EXIT CPU_SECONDS"
 * on stderr's last line (or to the file named by -o), so the benchmark needs no
 * GNU time.  CPU seconds are user + system of the command and its children.
 * usage: measure [-o FILE] COMMAND [ARGS...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *out = NULL;
    int i = 1;
    if (argc > 2 && !strcmp(argv[1], "-o")) {
        out = argv[2];
        i = 3;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: measure [-o FILE] COMMAND [ARGS...]\n");
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[i], argv + i);
        perror(argv[i]);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
        perror("measure");
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    FILE *f = out ? fopen(out, "w") : stderr;
    if (!f)
        return 1;
    double cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec)
                 + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
    fprintf(f, "%.3f %ld %d %.3f\n", wall, ru.ru_maxrss, code, cpu);
    if (out)
        fclose(f);
    return code;
}
