/* Loaded with LD_PRELOAD into a local job's MPI launcher (MPICH's hydra) and its proxies
 * only: a listening socket bound to every IPv4 interface (0.0.0.0) is bound to 127.0.0.1
 * instead, so that the launcher's control port is not reachable from other machines. Hydra
 * has no option to choose that address; its proxies connect to "localhost", so nothing else
 * changes. The ranks get the LD_PRELOAD the user had (mpiexec -genv), not this library. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    static bind_fn real;
    if (!real)
        real = (bind_fn) dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t) sizeof(struct sockaddr_in)) {
        struct sockaddr_in lo = *(const struct sockaddr_in *) addr;
        if (lo.sin_addr.s_addr == htonl(INADDR_ANY)) {
            lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real(fd, (const struct sockaddr *) &lo, sizeof lo);
        }
    }
    return real(fd, addr, len);
}
