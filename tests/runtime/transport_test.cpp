#include "omnidp/runtime/transport.hpp"

#include <gtest/gtest.h>

#include <thread>

#include "omnidp/runtime/mailbox.hpp"

namespace omnidp::runtime {
namespace {

TEST(Mailbox, FifoCloseAndTakeAll) {
  Mailbox<int> box;
  EXPECT_TRUE(box.push(1));
  EXPECT_TRUE(box.push(2));
  EXPECT_TRUE(box.push(3));
  EXPECT_EQ(box.try_pop(), 1);
  EXPECT_EQ(box.take_all(), (std::vector<int>{2, 3}));
  EXPECT_EQ(box.try_pop(), std::nullopt);
  EXPECT_EQ(box.pop_for(std::chrono::milliseconds(0)), std::nullopt);
  EXPECT_TRUE(box.push(4));
  box.close();
  EXPECT_FALSE(box.push(5));
  EXPECT_EQ(box.pop(), 4);             // what is left is still delivered
  EXPECT_EQ(box.pop(), std::nullopt);  // then closed
}

TEST(Mailbox, CloseWakesABlockedConsumer) {
  Mailbox<int> box;
  std::optional<int> got = 0;
  std::thread consumer([&] { got = box.pop(); });
  box.close();
  consumer.join();
  EXPECT_EQ(got, std::nullopt);
}

TEST(InProcessNetwork, ManualDeliveryIsStepByStepAndOrdered) {
  InProcessNetwork net(3, Delivery::manual);
  EXPECT_EQ(net.endpoint(2).rank(), 2);
  EXPECT_EQ(net.endpoint(2).size(), 3);
  send_message(net.endpoint(1), 0, StartMsg{1});
  send_message(net.endpoint(2), 0, StartMsg{2});
  send_message(net.endpoint(1), 0, StartMsg{3});
  EXPECT_EQ(poll_message(net.endpoint(0)), std::nullopt);  // nothing delivered yet
  const auto flight = net.in_flight();
  ASSERT_EQ(flight.size(), 3U);
  EXPECT_EQ(flight[0].from, 1);
  EXPECT_EQ(flight[0].to, 0);
  EXPECT_EQ(flight[0].tag, kProtocolTag);
  EXPECT_TRUE(net.deliver_next());
  auto env = poll_message(net.endpoint(0));
  ASSERT_TRUE(env);
  EXPECT_EQ(env->from, 1);
  EXPECT_EQ(std::get<StartMsg>(env->message).total, 1U);
  EXPECT_EQ(poll_message(net.endpoint(0)), std::nullopt);
  EXPECT_EQ(net.deliver_all(), 2U);
  EXPECT_EQ(std::get<StartMsg>(poll_message(net.endpoint(0))->message).total, 2U);
  EXPECT_EQ(std::get<StartMsg>(poll_message(net.endpoint(0))->message).total, 3U);
  EXPECT_FALSE(net.deliver_next());
}

TEST(InProcessNetwork, ImmediateDeliveryAndVariableSizes) {
  InProcessNetwork net(2);
  std::vector<std::uint8_t> big(1 << 20, 7);
  net.endpoint(0).send(1, 5, big);
  net.endpoint(0).send(1, 6, {});
  auto a = net.endpoint(1).poll();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->source, 0);
  EXPECT_EQ(a->tag, 5);
  EXPECT_EQ(a->bytes, big);
  auto b = net.endpoint(1).poll();
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->bytes.empty());
  EXPECT_THROW(net.endpoint(0).send(2, 1, {}), RuntimeError);
  EXPECT_THROW((void)net.endpoint(2), RuntimeError);
}

TEST(InProcessNetwork, BadBytesNameTheSender) {
  InProcessNetwork net(2);
  net.endpoint(1).send(0, kProtocolTag, {99});
  try {
    (void)poll_message(net.endpoint(0));
    FAIL() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_STREQ(e.what(), "rank 0: message from rank 1: unknown message type 99");
  }
}

TEST(InProcessNetwork, AbortStopsEveryRank) {
  InProcessNetwork net(2);
  try {
    net.endpoint(1).abort_job(75, "request 'x' hung");
    FAIL() << "abort_job returned";
  } catch (const JobAborted& e) {
    EXPECT_EQ(e.exit_code(), 75);
    EXPECT_STREQ(e.what(), "job aborted with exit code 75: request 'x' hung");
  }
  EXPECT_THROW((void)net.endpoint(0).poll(), JobAborted);
  EXPECT_THROW(net.endpoint(0).send(1, 1, {}), JobAborted);
}

}  // namespace
}  // namespace omnidp::runtime
