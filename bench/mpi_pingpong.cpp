// OpenMPI's side of bench/net_vs_mpi_shm, timed like net_bench's rows: an
// 8 B and a 1 KiB ping-pong (microseconds per round trip), and a stream of
// 16 messages of 1 MiB followed by a 1-byte acknowledgement (MB/s), received
// into one buffer and into 16 in turn. Built by
// the script with mpicxx; run on 2 ranks.
#include <mpi.h>

#include <cstdio>
#include <vector>

namespace {

double roundtrip_us(int rank, std::size_t bytes, int iterations) {
    std::vector<char> buf(bytes, 'x');
    const int peer = 1 - rank, n = static_cast<int>(bytes);
    auto one = [&] {
        if (rank == 0) {
            MPI_Send(buf.data(), n, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
            MPI_Recv(buf.data(), n, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf.data(), n, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf.data(), n, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        }
    };
    for (int i = 0; i < iterations / 10; ++i) one();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) one();
    return (MPI_Wtime() - t0) * 1e6 / iterations;
}

// The receiver receives the batch into `buffers` buffers in turn: 1 is the
// usual MPI loop (one buffer, hot in cache); 16 gives each message of a
// batch memory of its own, as a receiver of this project's messages has.
double stream_mb_per_s(int rank, int iterations, int buffers) {
    constexpr int batch = 16;
    constexpr int message = 1 << 20;
    std::vector<char> buf(message, 'x');
    std::vector<std::vector<char>> into(rank == 0 ? 0 : static_cast<std::size_t>(buffers),
                                        std::vector<char>(message, 'y'));
    char ack = 0;
    auto one = [&] {
        if (rank == 0) {
            for (int i = 0; i < batch; ++i) MPI_Send(buf.data(), message, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(&ack, 1, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < batch; ++i)
                MPI_Recv(into[static_cast<std::size_t>(i % buffers)].data(), message, MPI_CHAR, 0, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
            MPI_Send(&ack, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
        }
    };
    one();
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    for (int i = 0; i < iterations; ++i) one();
    return static_cast<double>(iterations) * batch * message / 1e6 / (MPI_Wtime() - t0);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const double rtt8 = roundtrip_us(rank, 8, 100000);
    const double rtt1k = roundtrip_us(rank, 1024, 50000);
    const double stream = stream_mb_per_s(rank, 100, 1);
    const double stream16 = stream_mb_per_s(rank, 100, 16);
    if (rank == 0) std::printf("RESULT %.3f %.3f %.1f %.1f\n", rtt8, rtt1k, stream, stream16);
    MPI_Finalize();
}
