#pragma once
// A node's one UCX worker (UCP, active messages): the shared memory and HPC
// interconnect path of the UCX transport (ucx_transport.hpp).
//
// One worker per node, shared by every UCX link of it. Frames travel as UCX
// active messages of one handler: a frame that UCX's short protocol takes
// at once (up to about a hundred bytes on shared memory) packed whole
// (header, then payload) as the message's data, sent in place; any other with its 32-byte header as the message's own
// header and its payload as the data, which UCX moves by rendezvous from
// rendezvous_from bytes on (one copy, by CMA on one host) and by its eager
// protocol below. UCX hands one endpoint's active messages to the handler in
// the order they were sent; a rendezvous payload completes later, so a
// peer's frames that come behind one wait in arrival order (`pending`).
// Credit frames (credit, ask_credit) are the exception: they are handed out
// as they come, since they are in no order with the peer's messages.
//
// Who calls what:
//   - the node's progress process (progress()), or a receiving process that
//     polls, progresses the worker; the handler runs inside, checks each
//     frame's header, copies an eager payload into a block of its own (or
//     starts a rendezvous straight into one, or into a landing), and
//     progress() hands each peer's completed frames out in arrival order;
//   - a link's sending process calls send() and flush(); a user process
//     sending a message calls send_direct() (node::post);
//   - the transport registers and forgets peers.
// The worker is made in UCS_THREAD_MODE_SERIALIZED: every UCX call is made
// under lock_, since the node's processes may run on several workers of a
// multi-thread runtime (with one worker thread lock_ costs nothing). UCX
// callbacks, the handler among them, run inside those calls and never take
// lock_.
//
// Landings: a receiving process that knows which message it waits for (a
// peer, a port and a tag no other message of that peer and port carries,
// as the collectives' tags are) may name a buffer of its own for it
// (land()). When a frame with exactly that address, of the named type and
// fitting the buffer, comes by rendezvous, its payload is received straight
// into the buffer, and the frame's payload points there: the receiver's copy
// becomes a no-op. Whoever named the buffer must unland()
// it before the buffer goes; unland waits while UCX is writing into it.
//
// Expected landings: a receiver that will name a buffer for a message but
// cannot yet (the buffer still holds the previous step's row) may say so
// first (expect_landing()). A rendezvous frame with that address that comes
// before its buffer is named is then held: its payload stays with the
// sender (UCX keeps the descriptor, the sender's send is not complete) and
// the frame waits in its peer's pending queue. It is fetched, once, by the
// first of: the buffer named (land(): straight into it), the expectation
// withdrawn (unexpect()), a later frame of the same peer arriving that is
// not held itself (it must not wait behind held ones), the buffer of a
// later held frame of the same peer named (that one's fetch must not wait
// for this one's landing either), the peer lost (released, not fetched), or
// the hold limit passing (progress()), all but the first into a block as
// usual. So held frames of a peer form a run of expected ones (a stream
// whose receiver names one buffer after another); the limit of each counts
// from its arrival or from the last landing named for a frame of that run
// ahead of it, whichever is later, so a run is held while its receiver
// keeps naming buffers, a wrong expectation costs at most the hold limit
// once, and no sender waits on a receiver that never names its buffer.
//
// Lifetime: per-peer records live as long as the worker (a late completion
// may still name one); the worker closes every endpoint before it goes.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "csp/runtime_lock.hpp"
#include "csp/spinlock.hpp"
#include "net/detail/landing_table.hpp"
#include "net/frame.hpp"
#include "net/message.hpp"

namespace csp::net::detail {

struct outgoing;

class ucx_worker {
public:
    // A frame of one peer, received whole; its header checked (frame.hpp).
    struct frame {
        header head;
        payload body;
    };

    // Makes the worker; throws net_error saying why UCX cannot be used.
    // `threaded`: the node's runtime has several worker threads (or is not
    // known), so calls into the worker take a real lock. `wake_progress`:
    // wakes the progress process (never blocks, never throws). The worker
    // calls it, outside lock_, whenever a call other than progress() leaves
    // the progress process work it would not see asleep: a send or flush
    // left in flight (UCX completes it only while progressed, and not every
    // transport signals the event fd), or the worker progressed by forget()
    // or unland() (which can take in other peers' messages, and spend the
    // event the sleeping progress process waits on).
    // `hold`: the longest a frame is held for an expected landing.
    ucx_worker(bool threaded, std::function<void()> wake_progress,
               std::chrono::microseconds hold = std::chrono::milliseconds(1));
    ~ucx_worker();
    ucx_worker(const ucx_worker&) = delete;
    ucx_worker& operator=(const ucx_worker&) = delete;

    // This worker's address, for the peer's endpoint (sent over the
    // authenticated TCP connection only).
    const std::string& address() const noexcept { return address_; }
    // The event fd to wait on after arm() said the worker may sleep.
    int event_fd() const noexcept { return efd_; }

    // Frames from `peer` are accepted from now on (before any endpoint
    // exists: the peer may send as soon as it has our address).
    void expect(int peer, std::uint32_t max_frame);
    // Connects to the peer's worker; throws net_error if the address is bad.
    void connect(int peer, const std::string& peer_address);
    // Drops the peer's endpoint (force close); its pending sends end.
    void forget(int peer) noexcept;

    // Sends one frame to `peer`, whose endpoint exists; never blocks. The
    // frame is kept until UCX is done with it (see wake_progress). Throws
    // net_error on failure. The link's outbound process sends every frame of its queue
    // this way; each data frame among them counts off the long path (see
    // send_direct).
    void send(int peer, outgoing f);

    // The direct path: a node's user process sends a data frame itself,
    // without the switch and the link's outbound process (two process
    // switches and a queue per message on a round trip of a microsecond).
    // Order: a user's messages to one peer must leave in the order sent,
    // whichever path each took. So the direct path is taken only while no
    // data frame to that peer is on the long path (handed to the switch,
    // not yet given to UCX by send()), and only between
    // open_direct() (the link's outbound process has started, so the link
    // is up over UCX) and the link's goodbye, forget() or close_direct().
    // A frame it does not take goes the long path and is counted there:
    // `f` is then left untouched. Both decisions are made under lock_,
    // where send() also counts a long-path frame off.
    enum class direct { sent, too_large, not_taken };
    direct send_direct(int peer, outgoing& f);
    // A long-path frame that send() will never see (dropped by the link).
    void left_long_path(int peer);
    void open_direct(int peer, std::uint32_t peer_max_frame);
    void close_direct(int peer);
    // Starts a flush of everything sent to `peer`; `done` is called (inside
    // a later progress() or at once) when it completed or failed.
    void flush(int peer, std::function<void(bool ok)> done);

    // Progresses the worker; appends each peer's completed frames, in
    // order, to `out` (peer, frame) and each broken peer's fault to
    // `faults`. `armed`: the caller may sleep on event_fd() now; otherwise
    // it should call again first.
    // Sends and flushes still in flight complete only while the worker is
    // progressed (some of UCX's transports, and an endpoint's wire-up, do
    // not signal the event fd): while in_flight() the caller should sleep
    // briefly at most.
    // `active`: something happened (a completion, a frame). With `arm`
    // false the worker is only progressed (`armed` is false).
    struct progress_result {
        bool armed;
        bool active;
    };
    progress_result progress(std::vector<std::pair<int, frame>>& out, std::vector<std::pair<int, std::string>>& faults,
                             bool arm);

    std::size_t in_flight() const noexcept { return in_flight_.load(std::memory_order_relaxed); }

    // Payloads from this size on go by rendezvous (one copy, from the
    // sender's bytes into the receiver's block or landing); only they are
    // landed or held, a smaller one is always copied into a block of its own.
    static constexpr std::size_t rendezvous_from = 64 * 1024;

    // See "Landings" above. `type`: the fingerprint the frame must carry.
    void land(int peer, std::uint32_t port, std::uint64_t tag, std::byte* at, std::size_t capacity,
              std::uint32_t type);
    // Ends the landing; if UCX is writing into its buffer, waits (progressing
    // the worker, yielding to the node's other processes) until it is done.
    // A payload already received there stays, for the message that carries it.
    void unland(int peer, std::uint32_t port, std::uint64_t tag);
    // Payloads received into a caller's buffer so far.
    std::size_t landed() const noexcept { return landed_.load(std::memory_order_relaxed); }

    // The message from `peer` to `port` with `tag` will be landed: hold it
    // until then if it comes first (see the header comment). Withdrawn by
    // unexpect(), whether or not it was landed meanwhile.
    void expect_landing(int peer, std::uint32_t port, std::uint64_t tag);
    void unexpect(int peer, std::uint32_t port, std::uint64_t tag);
    // Frames held for their landings now: while any is, the progress
    // process must look again within the hold limit.
    std::size_t held() const noexcept { return held_.load(std::memory_order_relaxed); }
    // Frames UCX kept a request for, not done at once (node_stats::sent_queued).
    std::size_t queued() const noexcept { return queued_.load(std::memory_order_relaxed); }
    // Small frames refused at first for a full queue (node_stats::found_queue_full).
    std::size_t queue_full() const noexcept { return queue_full_.load(std::memory_order_relaxed); }

private:
    struct impl;
    struct receive;  // a frame whose turn has not come (see pending)
    struct sending;  // one send in flight
    struct peer_state {
        void* ep = nullptr;  // ucp_ep_h
        bool direct = false;             // see send_direct
        std::uint32_t peer_max_frame = 0;  // the peer's, for the direct path
        std::uint32_t max_frame = 0;
        std::size_t taken_at_once = 0;  // the largest frame UCX took at once (see immediate_retries)
        // Frames behind one whose rendezvous payload is still arriving, that
        // one first, in arrival order; empty in the common case, where the
        // handler puts a frame in arrived_ at once.
        std::deque<receive*> pending;
        bool broken = false;           // a fault was reported; its frames are dropped
    };
    // The peer's record, or nullptr; under lock_. The last one found is
    // kept (records never move or go): a stream or a ping-pong asks for
    // the same peer at every frame, and the map's hash costs a division.
    peer_state* find(int peer);
    std::uint64_t& long_path(int peer);  // long_path_[peer], kept the same way
    // Force-closes the peer's endpoint, if any (its requests end); under lock_.
    void close_locked(peer_state& ps) noexcept;
    // A frame of up to pack_max bytes, packed into packing_ and sent if UCX
    // takes it at once (most small frames): no record to allocate and free.
    // Refused for a full queue to the peer, it is offered again while the
    // worker is polled a few times (ucx_worker.cpp, immediate_retries);
    // `progressed` is set if a poll did anything, so the caller wakes the
    // progress loop to hand out what arrived. False: send it with
    // send_locked. Under lock_.
    bool sent_at_once_locked(peer_state& ps, const outgoing& f, bool& progressed);
    // One offer of the packed frame of `size` bytes to UCX's short protocol.
    bool offered_locked(peer_state& ps, std::size_t size);
    // Posts s's UCX sends on ps's endpoint; under lock_. True if in flight.
    bool send_locked(peer_state& ps, sending* s);
    // The active message handler's work (see the header comment); under
    // lock_, inside a UCX call. `rndv`: `data` is UCX's descriptor of a
    // payload to fetch, not the payload. The message is always consumed:
    // taken, being fetched, or dropped (a dropped rendezvous completes at
    // its sender).
    // Returns whether UCX's descriptor was kept (a frame held, above).
    bool arrived(const void* user_header, std::size_t header_length, void* data, std::size_t length,
                 bool rndv) noexcept;
    // Starts fetching r's payload (UCX's descriptor `data`): into r->at if
    // r->landed is set, else into a new block. Under lock_.
    void fetch(receive* r, void* data) noexcept;
    // r is held no longer; its landing entry lets go of it unless it lands
    // there. Returns UCX's descriptor. Under lock_.
    void* unhold(int peer, receive* r) noexcept;
    // Fetches a held frame's payload (unhold, then fetch). Under lock_.
    void fetch_held(int peer, receive* r) noexcept;
    // Fetches ps's held frames: all of them, or those past their hold
    // limit at `now`. Under lock_.
    void fetch_held_of(int peer, peer_state& ps, bool all, std::chrono::steady_clock::time_point now) noexcept;
    // A block for a payload of `bytes`: a large one from blocks_ (its pages
    // already mapped), a small one new.
    std::shared_ptr<std::max_align_t[]> payload_block(std::size_t bytes);
    // `r` waits in its peer's pending queue for its turn; under lock_.
    void wait_turn(peer_state& ps, std::unique_ptr<receive> r);
    // Each peer's completed pending frames, in order, to `out`.
    void drain_receives(std::vector<std::pair<int, frame>>& out, std::vector<std::pair<int, std::string>>& faults);

    struct landing {
        std::byte* at = nullptr;  // nullptr: no buffer named yet (expected only)
        std::size_t capacity = 0;
        std::uint32_t type = 0;
        bool expected = false;    // expect_landing() and no unexpect() yet
        // The frame whose rendezvous writes into `at`, once one does; or,
        // with no buffer yet, the frame held for it.
        receive* body = nullptr;
    };
    // Whether a frame with header h would be received whole into l.
    static bool fits(const landing& l, const header& h) noexcept;
    // The record of a landed payload goes (delivered or dropped); under lock_.
    void landing_over(const receive* body) noexcept;

    class block_cache;
    std::unique_ptr<impl> impl_;
    std::shared_ptr<block_cache> blocks_;
    std::unique_ptr<std::byte[]> packing_;  // under lock_ (sent_at_once_locked)
    // Every UCX call (see the header comment). A progress loop takes it on
    // every look: with one worker thread it is no lock at all (a node is
    // used by the processes of one runtime), with several a spinlock, whose
    // uncontended lock and unlock are one exchange and one store where
    // std::mutex's are two atomic read-modify-writes.
    csp::runtime_lock<csp::spinlock> lock_;
    std::unordered_map<int, peer_state> peers_;
    std::size_t pending_ = 0;  // receive records in all peers' `pending`; under lock_
    // Frames and faults the handler found since progress() last took them
    // (it also runs inside other calls that progress the worker); under lock_.
    std::vector<std::pair<int, frame>> arrived_;
    std::vector<std::pair<int, std::string>> faulted_;
    // Per peer: data frames on the long path (send_direct). Apart from
    // peers_, because a node posts to a peer before its link exists.
    std::unordered_map<int, std::uint64_t> long_path_;
    int last_found_ = 0, last_long_ = 0;  // see find()
    peer_state* found_ = nullptr;
    std::uint64_t* long_ = nullptr;
    std::string address_;
    int efd_ = -1;
    std::function<void()> wake_progress_;  // see the constructor
    std::atomic<std::size_t> in_flight_{0};  // sends and flushes UCX has not completed
    std::unordered_map<landing_key, landing, landing_key_hash> landings_;  // under lock_
    std::atomic<std::size_t> landed_{0};
    std::atomic<std::size_t> held_{0};  // changed under lock_
    std::atomic<std::size_t> queued_{0};  // changed under lock_ (send_locked)
    std::atomic<std::size_t> queue_full_{0};  // changed under lock_ (sent_at_once_locked)
    std::chrono::microseconds hold_;
    // The records of sends in flight, a list through the records themselves
    // (under lock_): forget() releases the payloads of a lost peer's, which
    // UCX does not complete (see forget).
    sending* sends_ = nullptr;
    void unlink_sending(sending* s) noexcept;
};

}  // namespace csp::net::detail
