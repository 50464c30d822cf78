#include "csp/model/timeline_merge.hpp"

#include <boost/json.hpp>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace csp::model {

namespace json = boost::json;

namespace {

struct node_file {
    std::string name;
    int node;
    std::int64_t epoch_us;
    json::array events;
};

node_file read_timeline(const std::string& file, int index) {
    std::ifstream in(file);
    if (!in) throw std::runtime_error("timeline " + file + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    boost::system::error_code ec;
    json::value doc = json::parse(text.str(), ec);
    if (ec) throw std::runtime_error("timeline " + file + ": not JSON (" + ec.message() + ")");
    const json::object* top = doc.if_object();
    const json::value* events = top ? top->if_contains("traceEvents") : nullptr;
    const json::value* other = top ? top->if_contains("otherData") : nullptr;
    const json::value* epoch = other && other->is_object() ? other->as_object().if_contains("csp_epoch_us") : nullptr;
    const json::value* node = other && other->is_object() ? other->as_object().if_contains("csp_node") : nullptr;
    if (!events || !events->is_array() || !epoch || !epoch->is_int64() || !node || !node->is_int64())
        throw std::runtime_error("timeline " + file +
                                 ": not a csp timeline (no traceEvents, otherData.csp_node or otherData.csp_epoch_us)");
    const int rank = node->as_int64() >= 0 ? static_cast<int>(node->as_int64()) : index;
    return {file, rank, epoch->as_int64(), std::move(events->as_array())};
}

}  // namespace

merged_timeline merge_timelines(const std::vector<std::string>& files, std::ostream& out) {
    std::vector<node_file> nodes;
    std::set<int> seen;
    for (std::size_t i = 0; i < files.size(); ++i) {
        nodes.push_back(read_timeline(files[i], static_cast<int>(i)));
        if (!seen.insert(nodes.back().node).second)
            throw std::runtime_error("timeline " + files[i] + ": node " + std::to_string(nodes.back().node) +
                                     " is in an earlier file too");
    }
    std::int64_t base = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i)
        if (i == 0 || nodes[i].epoch_us < base) base = nodes[i].epoch_us;

    // Every flow gets a new id: a channel's keyed by (file, its id), a
    // message's by the key both its ends carry.
    std::map<std::pair<std::size_t, std::uint64_t>, std::uint64_t> channel_flows;
    std::map<std::string, std::uint64_t> message_flows;
    std::map<std::string, std::pair<int, int>> message_ends;  // key -> (sends, receives)
    std::uint64_t next_flow = 1;

    out << "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"csp_nodes\": " << nodes.size() << "}, \"traceEvents\": [\n";
    bool first = true;
    for (std::size_t f = 0; f < nodes.size(); ++f) {
        node_file& n = nodes[f];
        const double shift = static_cast<double>(n.epoch_us - base);
        for (json::value& v : n.events) {
            json::object* e = v.if_object();
            if (!e) continue;
            // pid 1 (program) and 2 (library) of node r: 2r + 1 and 2r + 2.
            if (json::value* pid = e->if_contains("pid"); pid && pid->is_int64())
                *pid = 2 * std::int64_t{n.node} + pid->as_int64();
            if (json::value* ts = e->if_contains("ts"); ts && ts->is_number()) *ts = ts->to_number<double>() + shift;
            const json::value* ph = e->if_contains("ph");
            if (ph && ph->is_string() && ph->as_string() == "M" && e->at("name") == "process_sort_index")
                e->at("args").as_object()["sort_index"] = e->at("pid");
            if (ph && ph->is_string() && (ph->as_string() == "s" || ph->as_string() == "f")) {
                json::value* id = e->if_contains("id");
                const json::value* args = e->if_contains("args");
                const json::value* key = args && args->is_object() ? args->as_object().if_contains("message") : nullptr;
                if (key && key->is_string()) {
                    const std::string k(key->as_string());
                    auto [it, added] = message_flows.try_emplace(k, next_flow);
                    if (added) ++next_flow;
                    if (id) *id = it->second;
                    auto& [sends, receives] = message_ends[k];
                    ++(ph->as_string() == "s" ? sends : receives);
                } else if (id && id->is_number()) {
                    auto [it, added] = channel_flows.try_emplace({f, id->to_number<std::uint64_t>()}, next_flow);
                    if (added) ++next_flow;
                    *id = it->second;
                }
            }
            out << (first ? "  " : ",\n  ") << json::serialize(v);
            first = false;
        }
    }
    out << "\n]}\n";

    merged_timeline r{nodes.size(), 0, 0};
    for (const auto& [key, ends] : message_ends) {
        if (ends.first == 1 && ends.second == 1) ++r.messages;
        else ++r.unmatched;
    }
    return r;
}

}  // namespace csp::model
