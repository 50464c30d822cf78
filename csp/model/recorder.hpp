#pragma once
// Records a run as a model::network.
//
//   csp::model::recorder rec;                 // installs itself as the observer
//   csp::run(root);
//   csp::model::network net = rec.take();     // and uninstalls
//
// It chains (chained_observer.hpp): a timeline and a recorder can run
// together.
// Per process it keeps the completed channel operations in order and, for
// every par, the child processes it ran. A process's name is taken when it
// ends (so names set with this_process::set_name count). Channels are named
// after their channel's name, or numbered. Buffered channels keep their
// capacity; an unbounded one gets the number of values sent on it.
//
// An alternation whose guards are all channel ends is recorded as a choice
// step: the ends it offered and the one it took (the exporters write it as
// a choice where the run shows what followed each branch). One with other
// guards (a timeout, skip, an IO watch) is recorded as the branch it took,
// and its process marked. The values sent are not recorded.
//
// A barrier sync is recorded with the phase it completed; when the run is
// taken, the processes of each phase are its members, and a barrier whose
// phases had different members (enroll, resign) becomes one model barrier
// per set of members, so each phase synchronises exactly the processes
// that took part in it.
//
// Communicators (collectives) report their messages with message(), so a
// collective's model shows rank-to-rank messages instead of the mailbox
// channels that carry them; their own channel operations are hidden by a
// quiet scope.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "csp/model/network.hpp"
#include "csp/model/chained_observer.hpp"

namespace csp::model {

// Which message of a communicator, as the communicator describes it (the
// recorder knows nothing of how a communicator numbers its messages): the
// sequence of calls it belongs to, the call's number there, and the phase
// inside the call.
struct message_id {
    std::uint32_t stream = 0;
    std::uint32_t call = 0;
    std::uint8_t step = 0;
    friend auto operator<=>(const message_id&, const message_id&) = default;
};

class recorder final : public chained_observer {
public:
    recorder();
    ~recorder() override;

    // Stops recording and returns the network.
    network take();

    void on_event(const csp::event& e) override;

    // A message of a communicator from rank `from` to rank `to`, sent or
    // received by the calling process. Each (from, to, stream, step) is one
    // buffered channel of the model, whatever the call: both ranks make the
    // calls of a stream in order, so the messages of successive calls pass
    // through it in the order they are sent and received, exactly as the
    // communicator's matching by call would pair them. A loop of calls then
    // repeats the same steps, and folds.
    void message(direction d, int from, int to, const message_id& id);

    // Adds a note (once) to what the model does not capture.
    void note(const std::string& text);

    // While alive, the calling process's channel operations are not recorded
    // (a communicator's internal channels).
    class quiet_scope {
    public:
        explicit quiet_scope(recorder* r);
        ~quiet_scope();
        quiet_scope(const quiet_scope&) = delete;
        quiet_scope& operator=(const quiet_scope&) = delete;

    private:
        recorder* r_;
        const void* process_;
    };

    // The recorder installed as the observer, if any.
    static recorder* active();

private:
    struct live {
        std::size_t model;
        std::vector<std::size_t> open_pars;  // indices into the body, innermost last
        int quiet = 0;
    };
    struct channel_use {
        std::size_t model;
        bool unbounded;
    };
    // A sync as it was recorded: the step that gets its model barrier when
    // the run is taken, and the phase that decides which one.
    struct recorded_sync {
        std::size_t process;  // model process
        std::size_t at;       // index of its step in the body
        std::uint64_t barrier;
        std::uint64_t phase;
    };
    void resolve_barriers();

    live* find_live(const void* process);
    std::size_t model_channel(const csp::channel_view& ch);  // made on first use
    void add_step(const void* process, step s);

    std::mutex lock_;
    bool taken_ = false;
    network net_;
    std::map<const void*, live> live_;
    std::map<std::uint64_t, channel_use> channels_;
    std::map<std::uint64_t, std::string> barrier_names_;  // by barrier id: the user's name or ""
    std::vector<recorded_sync> syncs_;
    std::map<std::tuple<int, int, std::uint32_t, std::uint8_t>, std::size_t> messages_;  // (from, to, stream, step)
};

}  // namespace csp::model
