#include "net/ucx_worker.hpp"

#include <sched.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

#include "csp/deadline_after.hpp"
#include "csp/timer.hpp"
#include "net/detail/node_core.hpp"
#include "net/errors.hpp"
#include "net/little_endian.hpp"

namespace csp::net::detail {

namespace {

std::string ucx_text(const char* what, ucs_status_t s) {
    return std::string("UCX: ") + what + ": " + ucs_status_string(s);
}

void check(const char* what, ucs_status_t s) {
    if (s != UCS_OK) throw net_error(ucx_text(what, s));
}

}  // namespace

struct ucx_worker::impl {
    ucp_context_h context = nullptr;
    ucp_worker_h worker = nullptr;
};

namespace {

// The one active message handler's id.
constexpr unsigned am_frame = 0;
std::shared_ptr<std::max_align_t[]> block_of(std::size_t bytes) {
    constexpr std::size_t unit = sizeof(std::max_align_t);
    return std::make_shared_for_overwrite<std::max_align_t[]>((bytes + unit - 1) / unit);
}

}  // namespace

// Blocks for large payloads, given back when their message is
// dropped and handed out again: UCX then writes large payloads (by CMA, the
// kernel copying from the sender) into pages that are already mapped; a
// fresh block costs a page fault per 4 KiB inside that copy. Sizes are
// rounded up to a power of two; at most max_kept bytes are kept.
class ucx_worker::block_cache : public std::enable_shared_from_this<block_cache> {
public:
    static constexpr std::size_t max_kept = std::size_t{64} << 20;

    ~block_cache() {
        for (auto& [size, blocks] : free_)
            for (std::max_align_t* b : blocks) delete[] b;
    }

    std::shared_ptr<std::max_align_t[]> get(std::size_t bytes) {
        const std::size_t size = std::bit_ceil(bytes);
        std::max_align_t* b = nullptr;
        {
            std::lock_guard lk(lock_);
            auto it = free_.find(size);
            if (it != free_.end() && !it->second.empty()) {
                b = it->second.back();
                it->second.pop_back();
                kept_ -= size;
            }
        }
        if (b == nullptr) b = new std::max_align_t[size / sizeof(std::max_align_t)];
        return {b, [cache = shared_from_this(), size](std::max_align_t* p) { cache->put(p, size); }};
    }

private:
    void put(std::max_align_t* b, std::size_t size) {
        {
            std::lock_guard lk(lock_);
            if (kept_ + size <= max_kept) {
                free_[size].push_back(b);
                kept_ += size;
                return;
            }
        }
        delete[] b;
    }

    std::mutex lock_;
    std::unordered_map<std::size_t, std::vector<std::max_align_t*>> free_;
    std::size_t kept_ = 0;
};

// A frame in its peer's `pending`: one whose payload UCX's rendezvous is
// bringing (done once it is there), one held for its expected landing (rts
// set), or one that came complete behind such a frame and waits its turn.
struct ucx_worker::receive {
    header head;
    std::shared_ptr<std::max_align_t[]> block;
    std::byte* at = nullptr;  // the payload's bytes: block's, or a landing's buffer
    bool landed = false;      // in a landing's buffer
    bool done = false;
    ucs_status_t status = UCS_OK;
    void* rts = nullptr;  // held: UCX's descriptor of the payload, not fetched yet
    std::chrono::steady_clock::time_point hold_until;
};

// Frames up to pack_max bytes (header and payload) are first packed into
// the worker's one packing buffer and offered to UCX as one contiguous
// message that it must take at once (sent_at_once_locked): its short
// protocol, which takes a message whose data has no separate header, sends
// it in place, with no record to allocate and no request (gathering an iov
// of the same 40 bytes took twice as long). Only when UCX cannot take a
// frame at once (larger than its short protocol, or its queue to the peer
// full) does it get a record, below. The short protocol takes about 100
// bytes on shared memory (a few hundred on some networks): a larger frame
// packed first would be copied only to be refused (rtt_1KiB 0.89 -> 0.85 us
// with the limit lowered from 8 KiB to this).
constexpr std::size_t pack_max = 256;

// A frame that UCX's short protocol takes, refused at once because the
// peer's queue (its shared-memory FIFO) is full, is offered again after
// each of up to this many polls of the worker, and only then queued (a
// record and a UCX request, sent from UCX's queue as slots free). Once one
// frame waits in UCX's queue, UCX refuses every later frame at once (to
// keep the order), and its queue is worked off only by polls of the
// worker: the node's progress process polls, but a process that sends in
// a loop gives it no turn, so a stream that outran its receiver once was
// queued almost whole (199,939 of 200,000 frames in net_ucx's test), a
// record and a callback each, and the sender became the slow side. The
// polls here send the waiting frames as the receiver frees slots, so the
// queue empties and later frames go at once again (a chain of 8-byte scans
// at 2 ranks: 40-70% of its frames never refused, against none; 0.40-0.72
// -> 0.21-0.33 us a message). A receiver that is not running costs these
// polls once per frame. Only sizes the short protocol took before are
// offered again (peer_state::taken_at_once): a larger frame is refused
// for its size.
constexpr int immediate_retries = 8;

// From this poll on, each poll of those retries is preceded by a
// sched_yield(). With more ranks than cores the receiver that would free a
// slot may be waiting for this very core, and polls that keep it free
// nothing: the frames were queued as if never retried (a chain of 8-byte
// scans at 8 ranks on 2 cores 2.4-3.8 us a call, 1.2-2.2 with the yields;
// 4 ranks 1.0-2.0 -> 0.5-1.3; 2 ranks on a core each unchanged, where the
// yield returns at once). lock_ is held across it, as across the polls:
// the frame must go before any other to this peer.
constexpr int retries_before_yield = 2;

// A send in flight: the frame (whose payload UCX reads in place) and its
// encoded header, kept until UCX is done with both.
struct ucx_worker::sending {
    ucx_worker* owner;
    outgoing f;
    int peer;
    // Neighbours on the owner's list of sends in flight (under its lock_).
    sending* prev = nullptr;
    sending* next = nullptr;
    std::array<std::byte, header::size> head{};
};

ucx_worker::ucx_worker(bool threaded, std::function<void()> wake_progress, std::chrono::microseconds hold)
    : impl_(std::make_unique<impl>()),
      blocks_(std::make_shared<block_cache>()),
      packing_(std::make_unique_for_overwrite<std::byte[]>(pack_max)),
      lock_(threaded),
      wake_progress_(std::move(wake_progress)),
      hold_(hold) {
    ucp_config_t* config = nullptr;
    check("reading the configuration", ucp_config_read(nullptr, nullptr, &config));
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    const ucs_status_t s = ucp_init(&params, config, &impl_->context);
    ucp_config_release(config);
    check("initialising", s);
    try {
        ucp_worker_params_t wp{};
        wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
        wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
        check("creating the worker", ucp_worker_create(impl_->context, &wp, &impl_->worker));
        ucp_address_t* a = nullptr;
        std::size_t n = 0;
        check("reading the worker address", ucp_worker_get_address(impl_->worker, &a, &n));
        address_.assign(reinterpret_cast<const char*>(a), n);
        ucp_worker_release_address(impl_->worker, a);
        check("getting the worker's event fd", ucp_worker_get_efd(impl_->worker, &efd_));
        ucp_am_handler_param_t hp{};
        hp.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                        UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
        hp.id = am_frame;
        hp.flags = UCP_AM_FLAG_WHOLE_MSG;  // an eager message reaches the handler whole
        hp.cb = [](void* arg, const void* user_header, std::size_t header_length, void* data, std::size_t length,
                   const ucp_am_recv_param_t* param) {
            const bool rndv = (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) != 0;
            // UCS_INPROGRESS: a held frame's descriptor is kept for a later fetch.
            return static_cast<ucx_worker*>(arg)->arrived(user_header, header_length, data, length, rndv)
                       ? UCS_INPROGRESS
                       : UCS_OK;
        };
        hp.arg = this;
        check("setting the frame handler", ucp_worker_set_am_recv_handler(impl_->worker, &hp));
    } catch (...) {
        if (impl_->worker) ucp_worker_destroy(impl_->worker);
        ucp_cleanup(impl_->context);
        throw;
    }
}

ucx_worker::~ucx_worker() {
    std::lock_guard lk(lock_);
    for (auto& [peer, ps] : peers_)
        for (receive* r : ps.pending)
            if (r->rts != nullptr) ucp_am_data_release(impl_->worker, std::exchange(r->rts, nullptr));
    for (auto& [peer, ps] : peers_) close_locked(ps);
    // Receives still posted belong to frames nobody will read.
    for (auto& [peer, ps] : peers_)
        for (receive* r : ps.pending) delete r;
    ucp_worker_destroy(impl_->worker);
    ucp_cleanup(impl_->context);
    while (sends_) {  // never completed: UCX is gone, nothing reads them
        sending* s = sends_;
        unlink_sending(s);
        delete s;
    }
}

ucx_worker::peer_state* ucx_worker::find(int peer) {
    if (peer == last_found_ && found_ != nullptr) return found_;
    auto it = peers_.find(peer);
    if (it == peers_.end()) return nullptr;
    last_found_ = peer;
    return found_ = &it->second;
}

std::uint64_t& ucx_worker::long_path(int peer) {
    if (peer != last_long_ || long_ == nullptr) {
        long_ = &long_path_[peer];
        last_long_ = peer;
    }
    return *long_;
}

void ucx_worker::expect(int peer, std::uint32_t max_frame) {
    std::lock_guard lk(lock_);
    peer_state& ps = peers_[peer];
    ps.max_frame = max_frame;
    ps.broken = false;
}

void ucx_worker::connect(int peer, const std::string& peer_address) {
    std::lock_guard lk(lock_);
    peer_state* ps = find(peer);
    if (ps == nullptr) throw std::logic_error("ucx_worker::connect before expect for node " + std::to_string(peer));
    ucp_ep_params_t ep{};
    ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep.address = reinterpret_cast<const ucp_address_t*>(peer_address.data());
    // No UCX error handling mode: it rules out the shared-memory transports
    // (they cannot detect a peer's failure), and the link learns of the
    // peer's end from its TCP connection anyway, then force-closes the
    // endpoint, which ends its requests. The handler only keeps UCX from
    // logging errors of endpoints whose peer has gone.
    ep.err_handler.cb = [](void*, ucp_ep_h, ucs_status_t) {};
    ep.err_handler.arg = nullptr;
    ucp_ep_h h = nullptr;
    check("connecting to the peer's worker", ucp_ep_create(impl_->worker, &ep, &h));
    ps->ep = h;
}

void ucx_worker::forget(int peer) noexcept {
    {
        std::lock_guard lk(lock_);
        peer_state* ps = find(peer);
        if (ps == nullptr || ps->ep == nullptr) return;
        ps->broken = true;
        // Its held frames will not be read: their payloads stay with the
        // peer (their records go, once done, with the peer's others).
        for (receive* r : ps->pending)
            if (r->rts != nullptr) {
                ucp_am_data_release(impl_->worker, unhold(peer, r));
                r->done = true;
            }
        close_locked(*ps);  // progresses the worker
        // Without UCX's error handling mode (see connect) a forced close does
        // not complete the requests the lost peer never answered (a rendezvous
        // it never fetched). Their records stay for a callback that may still
        // come, but their bytes are let go: nobody will read them (the endpoint
        // is closed, the peer gone), and a message may borrow its sender's
        // memory (loans.hpp), whose lender waits for every message to go.
        for (sending* s = sends_; s != nullptr; s = s->next)
            if (s->peer == peer) s->f.body = payload{};
    }
    wake_progress_();
}

void ucx_worker::close_locked(peer_state& ps) noexcept {
    if (ps.ep == nullptr) return;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    void* req = ucp_ep_close_nbx(static_cast<ucp_ep_h>(ps.ep), &p);
    ps.ep = nullptr;
    if (UCS_PTR_IS_PTR(req)) {
        while (ucp_request_check_status(req) == UCS_INPROGRESS) ucp_worker_progress(impl_->worker);
        ucp_request_free(req);
    }
}

void ucx_worker::send(int peer, outgoing f) {
    const bool goodbye = f.head.op == opcode::goodbye;
    bool in_flight = false, progressed = false;
    {
        std::lock_guard lk(lock_);
        // Every data frame that reaches this came the long path (send_direct).
        if (f.head.op == opcode::data) --long_path(peer);
        peer_state* ps = find(peer);
        if (ps == nullptr || ps->ep == nullptr) throw net_error("UCX: no endpoint to node " + std::to_string(peer));
        // Nothing may overtake the goodbye: the direct path ends with it.
        if (goodbye) ps->direct = false;
        in_flight = !sent_at_once_locked(*ps, f, progressed) && send_locked(*ps, new sending{this, std::move(f), peer});
    }
    if (in_flight || progressed) wake_progress_();
}

bool ucx_worker::sent_at_once_locked(peer_state& ps, const outgoing& f, bool& progressed) {
    const std::size_t size = header::size + f.body.size();
    if (size > pack_max) return false;
    f.head.encode(packing_.get());
    if (size > header::size) std::memcpy(packing_.get() + header::size, f.body.data(), size - header::size);
    // Packed once: packing_ keeps the frame across the polls, since no UCX
    // callback sends (none takes lock_).
    if (offered_locked(ps, size)) return true;
    if (size > ps.taken_at_once) return false;  // refused for its size, not for a full queue
    queue_full_.fetch_add(1, std::memory_order_relaxed);
    for (int i = 0; i < immediate_retries; ++i) {
        if (i >= retries_before_yield) sched_yield();
        if (ucp_worker_progress(impl_->worker) != 0) progressed = true;
        if (offered_locked(ps, size)) return true;
    }
    return false;
}

bool ucx_worker::offered_locked(peer_state& ps, std::size_t size) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FLAG_FORCE_IMM_CMPL;
    void* req = ucp_am_send_nbx(static_cast<ucp_ep_h>(ps.ep), am_frame, nullptr, 0, packing_.get(), size, &p);
    if (req == nullptr) {
        ps.taken_at_once = std::max(ps.taken_at_once, size);
        return true;
    }
    if (UCS_PTR_IS_ERR(req) && UCS_PTR_STATUS(req) != UCS_ERR_NO_RESOURCE)
        throw net_error(ucx_text("sending", UCS_PTR_STATUS(req)));
    return false;  // not at once: sent the usual way, kept until done
}

ucx_worker::direct ucx_worker::send_direct(int peer, outgoing& f) {
    bool in_flight = false, progressed = false;
    {
        std::lock_guard lk(lock_);
        peer_state* ps = find(peer);
        std::uint64_t& queued = long_path(peer);
        if (ps == nullptr || !ps->direct || ps->ep == nullptr || queued != 0) {
            ++queued;
            return direct::not_taken;
        }
        if (ps->peer_max_frame != 0 && f.head.length > ps->peer_max_frame) return direct::too_large;
        in_flight = !sent_at_once_locked(*ps, f, progressed) && send_locked(*ps, new sending{this, std::move(f), peer});
    }
    if (in_flight || progressed) wake_progress_();
    return direct::sent;
}

void ucx_worker::left_long_path(int peer) {
    std::lock_guard lk(lock_);
    --long_path(peer);
}

void ucx_worker::open_direct(int peer, std::uint32_t peer_max_frame) {
    std::lock_guard lk(lock_);
    if (peer_state* ps = find(peer); ps != nullptr && ps->ep != nullptr && !ps->broken) {
        ps->direct = true;
        ps->peer_max_frame = peer_max_frame;
    }
}

void ucx_worker::close_direct(int peer) {
    std::lock_guard lk(lock_);
    if (peer_state* ps = find(peer)) ps->direct = false;
}

void ucx_worker::unlink_sending(sending* s) noexcept {
    (s->prev ? s->prev->next : sends_) = s->next;
    if (s->next) s->next->prev = s->prev;
}

bool ucx_worker::send_locked(peer_state& ps, sending* s) {
    s->f.head.encode(s->head.data());
    const std::size_t body = s->f.body.size();
    // Callbacks run inside a later progress(), under lock_, as does this
    // function.
    auto done_cb = [](void* req, ucs_status_t, void* user) {
        auto* done = static_cast<sending*>(user);
        ucp_request_free(req);
        done->owner->in_flight_.fetch_sub(1, std::memory_order_relaxed);
        done->owner->unlink_sending(done);
        delete done;
    };
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
    p.user_data = s;
    p.cb.send = done_cb;
    // A large payload by rendezvous: the receiver fetches it from the
    // frame's own bytes, into its block or a landing, with one copy.
    p.flags = body >= rendezvous_from ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
    in_flight_.fetch_add(1, std::memory_order_relaxed);
    void* req = ucp_am_send_nbx(static_cast<ucp_ep_h>(ps.ep), am_frame, s->head.data(), header::size,
                                s->f.body.data(), body, &p);
    if (UCS_PTR_IS_PTR(req)) {
        queued_.fetch_add(1, std::memory_order_relaxed);
        s->next = sends_;
        if (sends_) sends_->prev = s;
        sends_ = s;
        return true;
    }
    // Done at once (or failed): no callback is coming.
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    delete s;
    if (UCS_PTR_IS_ERR(req)) throw net_error(ucx_text("sending", UCS_PTR_STATUS(req)));
    return false;
}

namespace {
struct flushing {
    std::atomic<std::size_t>* in_flight;
    std::function<void(bool)> done;
};
}  // namespace

void ucx_worker::flush(int peer, std::function<void(bool)> done) {
    auto* d = new flushing{&in_flight_, std::move(done)};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.user_data = d;
    p.cb.send = [](void* req, ucs_status_t s, void* user) {
        auto* f = static_cast<flushing*>(user);
        f->in_flight->fetch_sub(1, std::memory_order_relaxed);
        f->done(s == UCS_OK);
        delete f;
        ucp_request_free(req);
    };
    void* req = nullptr;
    {
        std::lock_guard lk(lock_);
        peer_state* ps = find(peer);
        in_flight_.fetch_add(1, std::memory_order_relaxed);
        if (ps != nullptr && ps->ep != nullptr) req = ucp_ep_flush_nbx(static_cast<ucp_ep_h>(ps->ep), &p);
        else req = UCS_STATUS_PTR(UCS_ERR_NOT_CONNECTED);
        if (!UCS_PTR_IS_PTR(req)) in_flight_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (!UCS_PTR_IS_PTR(req)) {
        d->done(req == nullptr);
        delete d;
    } else {
        wake_progress_();
    }
}

ucx_worker::progress_result ucx_worker::progress(std::vector<std::pair<int, frame>>& out,
                                                std::vector<std::pair<int, std::string>>& faults, bool arm) {
    std::lock_guard lk(lock_);
    ucp_worker_h w = impl_->worker;
    // One poll per look while spinning (the next look polls again); drained
    // before the worker is armed, as ucp_worker_arm requires.
    bool active = ucp_worker_progress(w) != 0;
    if (arm)
        while (ucp_worker_progress(w) != 0) active = true;
    // A peer's frames in arrived_ came before any of its pending ones (a
    // frame goes there only while its peer has none pending).
    if (!arrived_.empty()) {
        active = true;
        if (out.empty()) {
            out.swap(arrived_);
        } else {
            for (auto& f : arrived_) out.push_back(std::move(f));
            arrived_.clear();
        }
    }
    if (!faulted_.empty()) {
        for (auto& f : faulted_) faults.push_back(std::move(f));
        faulted_.clear();
    }
    if (held_.load(std::memory_order_relaxed) != 0) {
        const auto now = std::chrono::steady_clock::now();
        for (auto& [peer, ps] : peers_) fetch_held_of(peer, ps, false, now);
    }
    if (pending_ != 0) drain_receives(out, faults);
    if (!arm) return {false, active};
    return {ucp_worker_arm(w) == UCS_OK, active};
}

bool ucx_worker::arrived(const void* user_header, std::size_t header_length, void* data, std::size_t length,
                         bool rndv) noexcept {
    // The frame's header is the message's own header, or (a frame sent
    // whole) the first bytes of its data.
    const bool whole = header_length == 0 && !rndv;
    const auto* head = static_cast<const std::byte*>(whole ? data : user_header);
    const std::size_t head_bytes = whole ? length : header_length;
    constexpr std::size_t source_at = 12;  // frame.hpp
    // Too short to name its sender: nobody to tell (a rendezvous so
    // dropped completes at its sender).
    if (head_bytes < source_at + 4) return false;
    const int peer = static_cast<int>(get<std::uint32_t>(head + source_at));
    peer_state* ps = find(peer);
    if (ps == nullptr || ps->broken) return false;  // an unknown or broken peer's: dropped
    const std::size_t payload_bytes = whole ? length - std::min(length, header::size) : length;
    try {
        if (head_bytes < header::size)
            throw frame_error("a UCX message with " + std::to_string(head_bytes) +
                              " header bytes, shorter than a frame header");
        const header h = header::decode(head, ps->max_frame);
        if (h.length != payload_bytes)
            throw frame_error("frame header says " + std::to_string(h.length) +
                              " payload bytes, the UCX message holds " + std::to_string(payload_bytes));
        if (h.op != opcode::data && h.op != opcode::goodbye && h.op != opcode::credit && h.op != opcode::ask_credit)
            throw frame_error(std::string("unexpected ") + describe(h.op) + " frame over UCX");
        if (!rndv) {
            // UCX's bytes until this returns: copied into a block of the frame's own.
            std::shared_ptr<std::max_align_t[]> block;
            std::byte* at = nullptr;
            if (h.length) {
                block = payload_block(h.length);
                at = reinterpret_cast<std::byte*>(block.get());
                std::memcpy(at, static_cast<const std::byte*>(data) + (whole ? header::size : 0), h.length);
            }
            // Credit frames go out at once, even past frames of the peer
            // still arriving or held: they concern this node's own sends,
            // in no order with the peer's messages, and an ask for credit
            // must not let go of held frames (nor wait behind them) when a
            // stream of expected frames meets the peer's window.
            if (ps->pending.empty() || h.op == opcode::credit || h.op == opcode::ask_credit) {
                arrived_.emplace_back(peer,
                                      frame{h, h.length ? payload::adopt(std::move(block), at, h.length) : payload{}});
            } else {
                auto r = std::make_unique<receive>();
                r->head = h;
                r->block = std::move(block);
                r->at = at;
                r->done = true;
                wait_turn(*ps, std::move(r));
            }
            return false;
        }
        auto r = std::make_unique<receive>();
        r->head = h;
        landing* l = nullptr;
        if (!landings_.empty())
            if (auto it = landings_.find(landing_key{peer, h.port, h.tag}); it != landings_.end() && !it->second.body)
                l = &it->second;
        if (l != nullptr && fits(*l, h)) {
            r->landed = true;
            r->at = l->at;
            l->body = r.get();
        } else if (l != nullptr && l->expected && l->at == nullptr && h.op == opcode::data) {
            // Its buffer is not named yet: hold it (see the header comment).
            r->rts = data;
            r->hold_until = csp::deadline_after(hold_);
            l->body = r.get();
            held_.fetch_add(1, std::memory_order_relaxed);
            wait_turn(*ps, std::move(r));
            return true;
        }
        fetch(r.get(), data);
        wait_turn(*ps, std::move(r));
        return false;
    } catch (const std::exception& e) {
        // A malformed frame (or no memory for its block): the peer's stream
        // cannot go on.
        ps->broken = true;
        try {
            faulted_.emplace_back(peer, e.what());
        } catch (...) {
            // no memory to say so: the peer is cut off all the same
        }
    }
    return false;
}

std::shared_ptr<std::max_align_t[]> ucx_worker::payload_block(std::size_t bytes) {
    return bytes >= rendezvous_from ? blocks_->get(bytes) : block_of(bytes);
}

void ucx_worker::wait_turn(peer_state& ps, std::unique_ptr<receive> r) {
    // A frame behind held ones must not wait for their landings, unless it
    // is held itself (expected too): then each waits for its own.
    if (held_.load(std::memory_order_relaxed) != 0 && r->rts == nullptr && !ps.pending.empty())
        fetch_held_of(static_cast<int>(r->head.source), ps, true, {});
    ps.pending.push_back(r.get());
    r.release();
    ++pending_;
}

void ucx_worker::fetch(receive* r, void* data) noexcept {
    if (!r->landed) {
        try {
            r->block = payload_block(r->head.length);
            r->at = reinterpret_cast<std::byte*>(r->block.get());
        } catch (const std::bad_alloc&) {
            // Reported when the record's turn comes, as a failed receive:
            // the peer's stream cannot go on.
            ucp_am_data_release(impl_->worker, data);
            r->status = UCS_ERR_NO_MEMORY;
            r->done = true;
            return;
        }
    }
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.user_data = r;
    p.cb.recv_am = [](void* req, ucs_status_t st, std::size_t, void* user) {
        auto* rr = static_cast<receive*>(user);
        rr->status = st;
        rr->done = true;
        ucp_request_free(req);
    };
    void* req = ucp_am_recv_data_nbx(impl_->worker, data, r->at, r->head.length, &p);
    if (req == nullptr) {
        r->done = true;
    } else if (UCS_PTR_IS_ERR(req)) {
        r->done = true;
        r->status = UCS_PTR_STATUS(req);
    }
}

void* ucx_worker::unhold(int peer, receive* r) noexcept {
    held_.fetch_sub(1, std::memory_order_relaxed);
    if (!r->landed)
        if (auto it = landings_.find(landing_key{peer, r->head.port, r->head.tag});
            it != landings_.end() && it->second.body == r)
            it->second.body = nullptr;
    return std::exchange(r->rts, nullptr);
}

void ucx_worker::fetch_held(int peer, receive* r) noexcept {
    void* data = unhold(peer, r);
    fetch(r, data);
}

void ucx_worker::fetch_held_of(int peer, peer_state& ps, bool all, std::chrono::steady_clock::time_point now) noexcept {
    for (receive* r : ps.pending)
        if (r->rts != nullptr && (all || now >= r->hold_until)) fetch_held(peer, r);
}

void ucx_worker::drain_receives(std::vector<std::pair<int, frame>>& out,
                                std::vector<std::pair<int, std::string>>& faults) {
    for (auto& [peer, ps] : peers_) {
        // In arrival order; a broken peer's records go too, once UCX is done
        // with them.
        while (!ps.pending.empty() && ps.pending.front()->done) {
            std::unique_ptr<receive> r(ps.pending.front());
            ps.pending.pop_front();
            --pending_;
            if (r->landed) landing_over(r.get());
            if (ps.broken) continue;
            if (r->status != UCS_OK) {
                ps.broken = true;
                faults.emplace_back(peer, ucx_text("receiving", r->status));
                continue;
            }
            if (r->landed) {
                // The bytes are the landing's owner's: the message only points there.
                landed_.fetch_add(1, std::memory_order_relaxed);
                out.emplace_back(peer, frame{r->head, payload::adopt(std::shared_ptr<void>(), r->at, r->head.length)});
            } else {
                out.emplace_back(peer, frame{r->head, r->head.length
                                                          ? payload::adopt(std::move(r->block), r->at, r->head.length)
                                                          : payload{}});
            }
        }
    }
}

void ucx_worker::land(int peer, std::uint32_t port, std::uint64_t tag, std::byte* at, std::size_t capacity,
                      std::uint32_t type) {
    {
        std::lock_guard lk(lock_);
        landing& l = landings_[landing_key{peer, port, tag}];
        receive* held = l.body != nullptr && l.body->rts != nullptr ? l.body : nullptr;
        if (l.body != nullptr && held == nullptr) return;  // being received already: nothing to land
        l.at = at;
        l.capacity = capacity;
        l.type = type;
        if (held == nullptr) return;
        // Held frames of the peer ahead of it go as usual: it is handed
        // out after them, and its receiver, who named this buffer first,
        // may never name theirs. Those behind it are held a full limit
        // from now: a receiver taking a run of held frames one by one is
        // naming their buffers, and their hold counts from its last one.
        if (peer_state* ps = find(peer)) {
            bool ahead = true;
            const auto until = csp::deadline_after(hold_);
            for (receive* r : ps->pending) {
                if (r == held) ahead = false;
                else if (r->rts != nullptr && ahead) fetch_held(peer, r);
                else if (r->rts != nullptr) r->hold_until = std::max(r->hold_until, until);
            }
        }
        // Its frame came first and was held: fetch it straight into the
        // buffer, or as usual if it does not fit.
        if (fits(l, held->head)) {
            held->landed = true;
            held->at = at;
        }
        fetch_held(peer, held);
    }
    wake_progress_();  // a fetch to progress
}

bool ucx_worker::fits(const landing& l, const header& h) noexcept {
    // Only a payload the receiver would take whole: of its type, fitting its
    // buffer. Anything else is received as usual, and the receiver's own
    // checks name what is wrong.
    return l.at != nullptr && h.op == opcode::data && h.type == l.type && h.length <= l.capacity;
}

void ucx_worker::expect_landing(int peer, std::uint32_t port, std::uint64_t tag) {
    std::lock_guard lk(lock_);
    landings_[landing_key{peer, port, tag}].expected = true;
}

void ucx_worker::unexpect(int peer, std::uint32_t port, std::uint64_t tag) {
    {
        std::lock_guard lk(lock_);
        auto it = landings_.find(landing_key{peer, port, tag});
        if (it == landings_.end()) return;
        landing& l = it->second;
        l.expected = false;
        if (l.body != nullptr && l.body->rts != nullptr) {
            fetch_held(peer, l.body);  // lets go of it: l.body is nullptr now
        } else if (l.at == nullptr && l.body == nullptr) {
            landings_.erase(it);
            return;
        } else {
            return;
        }
    }
    wake_progress_();  // a fetch to progress
}

void ucx_worker::landing_over(const receive* body) noexcept {
    for (auto it = landings_.begin(); it != landings_.end(); ++it)
        if (it->second.body == body) {
            landings_.erase(it);
            return;
        }
}

void ucx_worker::unland(int peer, std::uint32_t port, std::uint64_t tag) {
    const landing_key key{peer, port, tag};
    bool progressed = false;
    for (;;) {
        bool over = true;
        {
            std::lock_guard lk(lock_);
            // Not found: delivered (or its peer's records dropped).
            if (auto it = landings_.find(key); it != landings_.end()) {
                const receive* body = it->second.body;
                // Not matched: nothing will be written. Written: the frame
                // that carries it is on its way and the entry goes with its
                // record.
                if (body == nullptr) {
                    if (it->second.expected) it->second.at = nullptr;  // expected still: a frame may be held
                    else landings_.erase(it);
                } else if (!body->done) {
                    // UCX is writing into the caller's buffer: let it finish
                    // (the rest of the payload is the sender's, already
                    // there to fetch).
                    ucp_worker_progress(impl_->worker);
                    progressed = true;
                    over = body->done;
                }
            }
        }
        if (over) break;
        csp::yield();
    }
    if (progressed) wake_progress_();
}

}  // namespace csp::net::detail
