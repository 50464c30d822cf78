#pragma once
// Neighbour exchange without allocation: the halo exchange of a stencil.
//
//   receive_into(comm, from, t, std::span<double>(ghost));           // fills the caller's buffer
//   sendrecv(comm, std::span<const double>(edge), to, std::span<double>(ghost), from);
//
//   // Built once over buffers that live as long as it (MPI's persistent
//   // requests), exchanged every step:
//   auto halo = make_neighbour_exchange<double>(comm, grid.neighbours(comm.rank()),
//                                               {top_row, bottom_row},         // sent to neighbour i
//                                               {ghost_above, ghost_below});   // received from neighbour i
//   halo.exchange();                                         // or start(); ...; finish();
//
//   // Or over rows of one vector, found again at each start(): the vector
//   // may be swapped with another or reallocated between exchanges.
//   auto halo = make_neighbour_exchange(comm, nbs, t, {row{n, n}, row{rows * n, n}},     // sent
//                                                     {row{0, n}, row{(rows + 1) * n, n}});  // received
//   for (...) { halo.exchange(); relax(t, next); t.swap(next); }
//
//   // A tile of a 2-D grid, rows x n between ghost rows and columns
//   // (w = n + 2 wide): rows, and columns as strided blocks
//   // (MPI_Type_vector) of one element every w.
//   auto halo = make_neighbour_exchange(comm, grid.neighbours(comm.rank()), t,
//       {row{w + 1, n}, row{rows * w + 1, n}, strided{w + 1, rows, 1, w}, strided{w + n, rows, 1, w}},
//       {row{1, n}, row{(rows + 1) * w + 1, n}, strided{w, rows, 1, w}, strided{w + n + 1, rows, 1, w}});
//
// Neighbours come in pairs along an axis, (before, after), as
// cartesian::neighbours lists them: what a rank sends to its `after`
// neighbour arrives there as that rank's `before` data, and the other way
// round, so two ranks that are each other's neighbour on both sides (a
// periodic axis of two) still get the right rows. A neighbour that is
// no_rank (past the edge of a non-periodic axis) is skipped: nothing is
// sent, and its receive buffer is left as it is.
//
// Receiving into the caller's buffers copies nothing where it can: a net
// communicator names each buffer for its row (net/landing.hpp)
// when finish() begins, or before anything is sent in exchange() and
// sendrecv, and a large row that has not arrived yet is then received
// straight into it. The buffers are written only between those points and
// the call's return, as before; a row that came earlier is copied from
// where it arrived, unless the transport held it: a neighbour that is one
// step ahead sends the next step's row while this rank still finishes the
// current one, so each start() also announces the next step's rows
// (net::node::expect), and over UCX such a row waits, in its sender's
// memory, for the buffer to be named (at most node_options::expected_hold).
// For this, a net or hybrid communicator's exchange draws its next step's
// tag one step ahead (its first draws two).
//
// In start() a send copies the caller's data into the message and returns,
// so the buffer may change as soon as start() returns. Built with
// sends::lent, a net or hybrid communicator sends rows of 32 KiB and more
// from the caller's buffers themselves (net/loans.hpp), as MPI's persistent
// sends do: no copy on the sending side, and the sent buffers must stay
// unchanged from start() until finish() returns, which waits until every
// transport is done with them. exchange() always lends: the caller cannot
// change a row while it runs, and it returns only once the rows may change,
// so a copy would buy nothing (README, Performance: the halo exchange). A
// receive copies the message into the caller's buffer, with no allocation on
// the way (net and hybrid communicators decode in place; a local one copies
// the vector the sender's span became). Each exchange is collective over
// the group: it draws one tag of its stream (a net or hybrid
// communicator's draws the next exchange's, above), so every rank exchanges
// the same number of times, in the same order as its other calls on that
// stream.
//
// A rank that is its own neighbour on both sides of an axis (a periodic
// axis of one rank) sends itself nothing: finish() copies what it would
// have sent on one side into its buffer of the other, as a receive would
// (under sends::copied, from a copy start() took, since the caller may
// change the row in between), field part to field part, strided or not:
// no message, and no staging unless the copy is one.
//
// Strided parts are staged: start() gathers each into a buffer of the
// exchange's, which is sent as a row is (lent, never copied again, since
// nothing changes it before the next start()), and finish() scatters what
// came into the field once every receive of the step is in, as MPI's
// implementations pack a vector datatype. Rows are not staged.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "collectives/cartesian.hpp"
#include "collectives/communicator.hpp"
#include "collectives/receive_view.hpp"
#include "collectives/revocation.hpp"
#include "net/landing.hpp"
#include "net/loans.hpp"

namespace csp::collectives {

// Receives a std::vector<E> (or a span of E) sent with tag `t` into `out`;
// returns how many elements came. Communicators that can decode in place
// (net, hybrid) do; any other (local: the vector the sender's span became)
// receives the vector and copies it.
template <class C, class E>
std::size_t receive_into(C& comm, int from, tag t, std::span<E> out) {
    if constexpr (requires { comm.receive_into(from, t, out); }) {
        return comm.receive_into(from, t, out);
    } else {
        const auto in = comm.template receive<std::vector<std::remove_cv_t<E>>>(from, t);
        if (in.size() > out.size())
            throw usage_error("a message of " + std::to_string(in.size()) + " elements from rank " +
                              std::to_string(from) + " does not fit a buffer of " + std::to_string(out.size()));
        std::copy(in.begin(), in.end(), out.begin());
        return in.size();
    }
}

// Sends `out` to `to` and receives into `in` from `from` (either may be
// no_rank); collective over the group, like sendrecv of a value
// (exchange.hpp). A rank that sends to and receives from itself copies
// `out` into `in`. Returns how many elements came, once `out` may change
// again: a net or hybrid communicator sends 32 KiB and more from `out`
// itself (net/loans.hpp) and waits, before it returns, until the
// transport is done with it.
template <class C, class E>
std::size_t sendrecv(C& comm, std::span<const E> out, int to, std::span<E> in, int from, stream s = {}) {
    return detail::guarded(comm, s, "sendrecv", [&] {
        if (to != no_rank) detail::check_rank(to, comm.size(), "sendrecv: destination");
        if (from != no_rank) detail::check_rank(from, comm.size(), "sendrecv: source");
        const tag t = comm.next_tag(s);
        if (to == comm.rank() && from == to) {  // to itself: copied across, no message
            if (out.size() > in.size())
                throw usage_error("sendrecv: " + std::to_string(out.size()) + " elements from rank " +
                                  std::to_string(from) + " (itself) do not fit a buffer of " +
                                  std::to_string(in.size()));
            if (!out.empty() && out.data() != in.data()) std::copy(out.begin(), out.end(), in.begin());
            return out.size();
        }
        net::landing landed;
        if (from != no_rank) landed = detail::land(comm, from, t, in);
        net::loans book;
        if (to != no_rank) detail::send_elements(comm, to, t, out, book);
        const std::size_t got = from == no_rank ? 0 : receive_into(comm, from, t, in);
        book.settle();
        return got;
    });
}

// How a neighbour_exchange's start() sends: copies of the rows (the
// default), or the rows themselves, left unchanged by the caller until
// finish() returns. exchange() lends either way.
enum class sends { copied, lent };

// `count` elements of a field from `offset`: a row a neighbour_exchange
// over a vector sends or receives.
struct row {
    std::size_t offset;
    std::size_t count;
};

// `count` blocks of `length` elements of a field, the first from `offset`
// and each `stride` elements after the one before (MPI_Type_vector): the
// column of a row-major grid w wide is strided{first, rows, 1, w}; a face
// of a 3-D block nx x ny x nz across its middle axis strided{first, nz, nx,
// nx * ny}. Blocks may not overlap (stride >= length).
struct strided {
    std::size_t offset;
    std::size_t count;
    std::size_t length;
    std::size_t stride;
};

// What an exchange over a field sends to, or receives from, one neighbour:
// a row (one block) or strided blocks.
struct field_part {
    field_part(row r) : offset(r.offset), count(1), length(r.count), stride(r.count) {}
    field_part(strided s) : offset(s.offset), count(s.count), length(s.length), stride(s.stride) {}

    std::size_t elements() const noexcept { return count * length; }
    // Blocks that follow each other with no gap are a row: sent from the
    // field and received into it, not staged.
    bool contiguous() const noexcept { return count <= 1 || stride == length; }

    std::size_t offset, count, length, stride;
};

template <class T, class C>
class neighbour_exchange {
public:
    // Over rows (or strided parts) of `field`, which the exchange refers to
    // (it must outlive it): each start() finds the rows in the vector as it
    // is then, so between exchanges the vector may be swapped with another
    // (a stencil's double buffer) or resized; from start() until finish()
    // returns it must stay as it is. A row outside the vector fails that
    // step, as a row of the wrong size does.
    neighbour_exchange(C& comm, std::vector<int> neighbours, std::vector<T>& field, std::vector<field_part> out,
                       std::vector<field_part> in, stream s = {}, sends how = sends::copied)
        : comm_(&comm),
          neighbours_(std::move(neighbours)),
          out_(out.size()),
          in_(in.size()),
          stream_(s),
          lend_(how == sends::lent),
          field_(&field),
          out_rows_(std::move(out)),
          in_rows_(std::move(in)) {
        detail::guarded(comm, s, "neighbour exchange", [&] {
            check(comm.size());
            stage_parts();
            find_rows();
        });
    }

    neighbour_exchange(C& comm, std::vector<int> neighbours, std::vector<std::span<const T>> out,
                       std::vector<std::span<T>> in, stream s = {}, sends how = sends::copied)
        : comm_(&comm),
          neighbours_(std::move(neighbours)),
          out_(std::move(out)),
          in_(std::move(in)),
          stream_(s),
          lend_(how == sends::lent) {
        // Bad arguments are often one rank's alone (a grid larger than the
        // group gives a neighbour outside it only to the ranks at its far
        // edge), and the others would wait in their first exchange for rows
        // this rank never sends: the stream is revoked from that exchange
        // on, as a failed collective call's is (revocation.hpp).
        detail::guarded(comm, s, "neighbour exchange", [&] { check(comm.size()); });
    }

    // start() and finish() in one: the receive buffers are named for their
    // rows before anything is sent, so a row that comes later lands, and
    // the rows are lent whatever the sends mode (see the header comment).
    void exchange() {
        start(true);
        finish();
    }

    // Sends every buffer and returns: the caller may compute (and change
    // what it sent) before finish() receives.
    void start() { start(false); }

    // Receives into every buffer, each from its neighbour's opposite side.
    // A row that does not fit fails this step at every rank of the stream
    // (revocation.hpp): the neighbours would wait for this rank's next rows.
    void finish() {
        if (!started_) throw usage_error("neighbour_exchange: finish() without start()");
        started_ = false;
        detail::guarded_from(*comm_, tag_, stream_, "neighbour exchange", [&] {
            if (!landing_) land();
            landing_ = false;
            for (std::size_t i = 0; i < neighbours_.size(); ++i) {
                if (neighbours_[i] == no_rank) continue;
                const std::size_t got = to_self(i) ? copy_from_self(i)
                                                   : receive_into(*comm_, neighbours_[i],
                                                                  tag_.step(static_cast<std::uint8_t>(i ^ 1)), in_[i]);
                if (got != in_[i].size())
                    throw usage_error("neighbour_exchange: rank " + std::to_string(neighbours_[i]) + " sent " +
                                      std::to_string(got) + " elements for a buffer of " +
                                      std::to_string(in_[i].size()));
            }
            // Every receive is in: the staged parts go to the field (a
            // step that failed above leaves the field's parts as they were;
            // a self pair's were written in place).
            for (std::size_t i = 0; i < in_rows_.size(); ++i)
                if (neighbours_[i] != no_rank && !to_self(i) && !in_rows_[i].contiguous())
                    scatter(in_rows_[i], staged_in_[i]);
        });
        landings_.clear();
        book_.settle();
    }

    const std::vector<int>& neighbours() const noexcept { return neighbours_; }
    // Rows sent from the caller's buffers so far (exchange(), or start()
    // under sends::lent), not copied.
    std::size_t lent_count() const noexcept { return book_.lent_count(); }

private:
    // Whether both neighbours of i's axis are this rank: it then is its
    // own neighbour on either side, and what goes out on side i ^ 1 comes
    // back in on side i.
    bool to_self(std::size_t i) const {
        const int me = comm_->rank();
        return neighbours_[i] == me && neighbours_[i ^ 1] == me;
    }

    // What this rank sent itself on side i ^ 1, into its part i (finish()
    // of a self pair): from what start() kept under sends::copied, else
    // from the field (or span) itself, which the caller left alone since;
    // into the field's part itself, strided or not. Returns the elements
    // copied, or the count that did not fit, as a receive would.
    std::size_t copy_from_self(std::size_t i) {
        const std::size_t j = i ^ 1;
        const T* from = out_[j].data();
        field_part from_part = row{0, out_[j].size()};
        if (copied_) {
            const auto& kept = field_ != nullptr && !out_rows_[j].contiguous() ? staged_out_[j] : self_copies_[j];
            from = kept.data();
            from_part = row{0, kept.size()};
        } else if (field_ != nullptr) {
            from = field_->data();
            from_part = out_rows_[j];
        }
        T* to = in_[i].data();
        field_part to_part = row{0, in_[i].size()};
        if (field_ != nullptr) {
            to = field_->data();
            to_part = in_rows_[i];
        }
        const std::size_t n = from_part.elements();
        if (n != to_part.elements()) return n;
        copy_part(from, from_part, to, to_part);
        return n;
    }

    // Part `from_part` at `from` to part `to_part` at `to`, of as many
    // elements: a strided part into a staging buffer and back (gather,
    // scatter), or a self pair's part to part.
    static void copy_part(const T* from, const field_part& from_part, T* to, const field_part& to_part) {
        const std::size_t n = from_part.elements();
        if (n == 0) return;
        // Parts that share elements (a caller's mistake) are copied as a
        // receive would have: from what the source held before.
        if (may_share(from, from_part, to, to_part)) {
            std::vector<T> kept(n);
            copy_part(from, from_part, kept.data(), row{0, n});
            copy_part(kept.data(), row{0, n}, to, to_part);
            return;
        }
        // A part without gaps takes the other's blocks, so a row and a
        // strided part copy block by block.
        field_part fp = from_part, tp = to_part;
        if (fp.contiguous()) fp = shaped_like(fp, tp);
        else if (tp.contiguous()) tp = shaped_like(tp, fp);
        if (fp.length == tp.length) {
            // Blocks of one element (a column) are assigned: a copy_n of a
            // length known only at run time is a call to memmove per
            // element, which took a third of a 2-D exchange's time.
            if (fp.length == 1) {
                for (std::size_t b = 0; b < fp.count; ++b)
                    to[tp.offset + b * tp.stride] = from[fp.offset + b * fp.stride];
                return;
            }
            for (std::size_t b = 0; b < fp.count; ++b)
                std::copy_n(from + fp.offset + b * fp.stride, fp.length, to + tp.offset + b * tp.stride);
            return;
        }
        // Strided blocks of other lengths: element by element.
        std::size_t s = fp.offset, d = tp.offset, si = 0, di = 0;
        for (std::size_t k = 0; k < n; ++k) {
            to[d] = from[s];
            if (++si == fp.length) si = 0, s += fp.stride - fp.length + 1;
            else ++s;
            if (++di == tp.length) di = 0, d += tp.stride - tp.length + 1;
            else ++d;
        }
    }

    // A part without gaps (p) as blocks of like's length, one after the
    // other: the same elements when both parts hold as many.
    static field_part shaped_like(const field_part& p, const field_part& like) {
        return strided{p.offset, like.count, like.length, like.length};
    }

    // Whether parts p at a and q at b may share an element: their spans
    // overlap, unless both are strided alike and their blocks sit at
    // offsets that never meet (the left and right columns of a tile).
    static bool may_share(const T* a, const field_part& p, const T* b, const field_part& q) {
        const T* pa = a + p.offset;
        const T* qb = b + q.offset;
        const std::less<const T*> before;
        if (!before(pa, qb + (q.count - 1) * q.stride + q.length) ||
            !before(qb, pa + (p.count - 1) * p.stride + p.length))
            return false;
        if (p.count <= 1 || q.count <= 1 || p.stride != q.stride) return true;
        // Both spans lie in one array here. p's blocks start r elements
        // past q's, modulo the stride: they miss q's iff [r, r + p.length)
        // fits between q's block end and the next block.
        const auto s = static_cast<std::ptrdiff_t>(p.stride);
        const auto r = static_cast<std::size_t>(((pa - qb) % s + s) % s);
        return r < q.length || r + p.length > p.stride;
    }

    void check(int group_size) const {
        const std::size_t n = neighbours_.size();
        if (n % 2 != 0 || n > 254)
            throw usage_error(
                "neighbour_exchange: neighbours come in (before, after) pairs, at most 127 of them; got " +
                std::to_string(n));
        if (out_.size() != n || in_.size() != n)
            throw usage_error("neighbour_exchange: " + std::to_string(n) + " neighbours but " +
                              std::to_string(out_.size()) + " send and " + std::to_string(in_.size()) +
                              " receive buffers");
        for (int r : neighbours_)
            if (r != no_rank) detail::check_rank(r, group_size, "neighbour_exchange: neighbour");
        // What goes out on one side of an axis comes in on the other: a
        // rank that is its own neighbour on one side only would wait for
        // ever for the row it sent the other neighbour.
        const int me = comm_->rank();
        for (std::size_t i = 0; i < n; i += 2) {
            const bool before = neighbours_[i] == me, after = neighbours_[i + 1] == me;
            if (before == after) continue;
            const int other = before ? neighbours_[i + 1] : neighbours_[i];
            throw usage_error("neighbour_exchange: rank " + std::to_string(me) + " is its own neighbour on side " +
                              std::to_string(before ? i : i + 1) + " but " +
                              (other == no_rank ? std::string("has none") : "has rank " + std::to_string(other)) +
                              " on side " + std::to_string(before ? i + 1 : i) +
                              ": a rank is its own neighbour on both sides of an axis or on neither");
        }
    }

    // whole: exchange(), which finishes before the caller can touch a row.
    void start(bool whole) {
        if (started_) throw usage_error("neighbour_exchange: start() twice without finish()");
        if constexpr (expects) {
            // The next step's rows are announced before this step's go out:
            // a neighbour can send its next row only after it got ours, so
            // that row never comes before its expectation.
            tag_ = have_next_ ? next_ : comm_->next_tag(stream_);
            next_ = comm_->next_tag(stream_);
            have_next_ = true;
            expected_now_ = std::move(expected_next_);
            expected_next_.clear();
            for (std::size_t i = 0; i < neighbours_.size(); ++i)
                if (neighbours_[i] != no_rank)
                    expected_next_.push_back(comm_->expect(neighbours_[i], next_.step(static_cast<std::uint8_t>(i ^ 1)),
                                                           in_[i].size_bytes()));
        } else {
            tag_ = comm_->next_tag(stream_);
        }
        landing_ = whole;
        copied_ = !lend_ && !whole;
        // A send that fails (a neighbour lost or gone) fails the step at
        // every rank of the stream, as a failed receive in finish() does:
        // the other neighbours would otherwise wait for this rank's rows.
        // A start that throws leaves the exchange not started.
        detail::guarded_from(*comm_, tag_, stream_, "neighbour exchange", [&] {
            find_rows();
            if (whole) land();
            for (std::size_t i = 0; i < neighbours_.size(); ++i) {
                if (neighbours_[i] == no_rank) continue;
                const tag t = tag_.step(static_cast<std::uint8_t>(i));
                const bool staged = field_ != nullptr && !out_rows_[i].contiguous();
                if (to_self(i)) {
                    // Copied sends keep what start() found (a strided part
                    // in its staging buffer, which nothing else changes);
                    // otherwise finish() copies from where it is.
                    if (copied_ && staged) gather(out_rows_[i], staged_out_[i]);
                    else if (copied_) {
                        self_copies_.resize(neighbours_.size());
                        self_copies_[i].assign(out_[i].begin(), out_[i].end());
                    }
                    continue;
                }
                if (staged) gather(out_rows_[i], staged_out_[i]);
                if (lend_ || whole || staged) detail::send_elements(*comm_, neighbours_[i], t, out_[i], book_);
                else comm_->send(neighbours_[i], t, out_[i]);
            }
        });
        started_ = true;
    }

    // An exchange over a field: a staging buffer for each strided part,
    // made once (a landing names it, so it never moves).
    void stage_parts() {
        if (field_ == nullptr) return;
        const auto stage = [](const std::vector<field_part>& parts, std::vector<std::vector<T>>& staged,
                              const char* what) {
            staged.resize(parts.size());
            for (std::size_t i = 0; i < parts.size(); ++i) {
                const field_part& p = parts[i];
                if (p.contiguous()) continue;
                if (p.stride < p.length)
                    throw usage_error("neighbour_exchange: " + std::string(what) + " part " + std::to_string(i) +
                                      " has blocks of " + std::to_string(p.length) + " elements " +
                                      std::to_string(p.stride) + " apart: they overlap");
                staged[i].resize(p.elements());
            }
        };
        stage(out_rows_, staged_out_, "send");
        stage(in_rows_, staged_in_, "receive");
    }

    // An exchange over a field: the spans of its rows in the vector as it
    // is now, and of the staging buffers of its strided parts.
    void find_rows() {
        if (field_ == nullptr) return;
        const std::size_t size = field_->size();
        const auto find = [&](const field_part& p, std::vector<T>& staged, const char* what, std::size_t i) {
            if (p.contiguous()) {
                if (p.offset > size || p.elements() > size - p.offset)
                    throw usage_error("neighbour_exchange: " + std::string(what) + " row " + std::to_string(i) +
                                      " (elements " + std::to_string(p.offset) + " to " +
                                      std::to_string(p.offset + p.elements()) + ") is outside the field of " +
                                      std::to_string(size) + " elements");
                return std::span<T>(field_->data() + p.offset, p.elements());
            }
            // The last block ends at offset + (count - 1) * stride + length;
            // each term is checked before it is added, so none overflows.
            const std::size_t last = p.offset <= size && (p.count - 1) <= (size - p.offset) / p.stride
                                         ? p.offset + (p.count - 1) * p.stride
                                         : size + 1;
            if (last > size || p.length > size - last)
                throw usage_error("neighbour_exchange: " + std::string(what) + " part " + std::to_string(i) + " (" +
                                  std::to_string(p.count) + " blocks of " + std::to_string(p.length) + ", " +
                                  std::to_string(p.stride) + " apart, from element " + std::to_string(p.offset) +
                                  ") is outside the field of " + std::to_string(size) + " elements");
            return std::span<T>(staged);
        };
        for (std::size_t i = 0; i < out_rows_.size(); ++i) out_[i] = find(out_rows_[i], staged_out_[i], "send", i);
        for (std::size_t i = 0; i < in_rows_.size(); ++i) in_[i] = find(in_rows_[i], staged_in_[i], "receive", i);
    }

    // A strided part of the field into its staging buffer, and back; the
    // part was found inside the field by find_rows().
    void gather(const field_part& p, std::vector<T>& staged) const {
        copy_part(field_->data(), p, staged.data(), row{0, staged.size()});
    }
    void scatter(const field_part& p, const std::vector<T>& staged) {
        copy_part(staged.data(), row{0, staged.size()}, field_->data(), p);
    }

    // Names each receive buffer for its row of this exchange (net
    // communicators; landings_ withdraws them).
    void land() {
        if constexpr (requires { comm_->land(0, tag_, in_[0]); }) {
            landings_.clear();
            for (std::size_t i = 0; i < neighbours_.size(); ++i)
                if (neighbours_[i] != no_rank)
                    landings_.push_back(
                        comm_->land(neighbours_[i], tag_.step(static_cast<std::uint8_t>(i ^ 1)), in_[i]));
            expected_now_.clear();  // after the landings: a held row was fetched into its buffer
        }
    }

    static constexpr bool expects = requires(C & c, tag t) { c.expect(0, t); };

    C* comm_;
    std::vector<int> neighbours_;
    std::vector<std::span<const T>> out_;
    std::vector<std::span<T>> in_;
    stream stream_;
    tag tag_;
    bool started_ = false;
    bool landing_ = false;  // exchange(): the buffers were named before the sends
    bool copied_ = false;   // start() under sends::copied: self pairs copy from self_copies_
    bool lend_;
    // Lends the rows under sends::lent; settled by finish(), and by the
    // destructor if an exchange ends by an exception.
    net::loans book_;
    // The receive buffers named for this finish()'s rows (net communicators);
    // withdrawn when it returns, or by the next finish() or the destructor
    // if it ended by an exception, before the buffers can go.
    std::vector<net::landing> landings_;
    // Net and hybrid communicators: this step's rows announced by the
    // previous start() (until land() names their buffers), and the next
    // step's, whose tag next_ is drawn already.
    std::vector<net::landing> expected_now_, expected_next_;
    tag next_;
    bool have_next_ = false;
    // An exchange over a field: the vector and its parts (out_ and in_ are
    // their spans, found again by each start(), in the field for a row and
    // in staged_out_ / staged_in_ for strided blocks); nullptr for one over
    // spans.
    std::vector<T>* field_ = nullptr;
    std::vector<field_part> out_rows_, in_rows_;
    std::vector<std::vector<T>> staged_out_, staged_in_;
    // A self pair's rows as start() found them, under sends::copied (sized
    // by the first start(), then reused).
    std::vector<std::vector<T>> self_copies_;
};

template <class T, class C>
neighbour_exchange<T, C> make_neighbour_exchange(C& comm, std::vector<int> neighbours,
                                                 std::vector<std::span<const T>> out, std::vector<std::span<T>> in,
                                                 stream s = {}, sends how = sends::copied) {
    return neighbour_exchange<T, C>(comm, std::move(neighbours), std::move(out), std::move(in), s, how);
}

template <class T, class C>
neighbour_exchange<T, C> make_neighbour_exchange(C& comm, std::vector<int> neighbours, std::vector<T>& field,
                                                 std::vector<field_part> out, std::vector<field_part> in, stream s = {},
                                                 sends how = sends::copied) {
    return neighbour_exchange<T, C>(comm, std::move(neighbours), field, std::move(out), std::move(in), s, how);
}

}  // namespace csp::collectives
