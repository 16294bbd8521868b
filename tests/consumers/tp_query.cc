// SPDX-License-Identifier: MIT
// tp_query.cc - runs SQL on a trace with Perfetto's trace processor, as
// shipped by Debian's chromium-shell in /usr/lib/chromium/
// libtest_trace_processor.so (Chromium's base::test::TestTraceProcessorImpl,
// which wraps perfetto::trace_processor::TraceProcessor).
//
//   tp_query TRACE SQL     prints the result rows, tab-separated, no header
//
// Exits 1 with a message when the trace does not parse or the query fails.
//
// The library is built against Chromium's own libc++ (namespace std::__1),
// which it exports, so this driver is compiled with clang++ -stdlib=libc++
// -nostdlib++ and takes libc++ from the library.  The two classes below
// are declared as Chromium's base/test/test_trace_processor_impl.h has them
// (the layout of QueryResultOrError is read, TestTraceProcessorImpl's is
// not: it is only ever constructed in storage larger than it is).
#include <cstdio>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace absl {
// absl::Status: one word, 1 when ok (absl's inlined kOk); non-trivial, so
// it is returned in memory exactly as the library returns it.
class Status {
  public:
    ~Status() {}
    uintptr_t rep_;
};
} // namespace absl

namespace base::test {
class QueryResultOrError {
  public:
    using QueryResult = std::vector<std::vector<std::string>>;
    ~QueryResultOrError();
    QueryResult result_;
    std::string error_;
};

class TestTraceProcessorImpl {
  public:
    TestTraceProcessorImpl();
    ~TestTraceProcessorImpl();
    absl::Status ParseTrace(const std::vector<char> &raw_trace);
    QueryResultOrError ExecuteQuery(const std::string &sql) const;
};
} // namespace base::test

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: tp_query TRACE SQL\n");
        return 2;
    }
    std::FILE *f = std::fopen(argv[1], "rb");
    if (!f) {
        std::perror(argv[1]);
        return 1;
    }
    std::vector<char> data;
    char buf[1 << 16];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), f)) > 0;)
        data.insert(data.end(), buf, buf + n);
    std::fclose(f);

    alignas(64) static unsigned char storage[4096];
    auto *tp = new (storage) base::test::TestTraceProcessorImpl();
    absl::Status st = tp->ParseTrace(data);
    if (st.rep_ != 1) {
        std::fprintf(stderr, "tp_query: %s: the trace processor did not parse it (status %#lx)\n",
                     argv[1], (unsigned long)st.rep_);
        return 1;
    }
    base::test::QueryResultOrError r = tp->ExecuteQuery(argv[2]);
    if (!r.error_.empty()) {
        std::fprintf(stderr, "tp_query: query failed: %s\n", r.error_.c_str());
        return 1;
    }
    for (size_t i = 1; i < r.result_.size(); i++) { // row 0: the column names
        for (size_t j = 0; j < r.result_[i].size(); j++)
            std::printf("%s%s", j ? "\t" : "", r.result_[i][j].c_str());
        std::printf("\n");
    }
    return 0;
}
