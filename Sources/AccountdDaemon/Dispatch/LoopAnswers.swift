import AccountdCore
import NIOCore
import Synchronization

/// The answers a group commit gives the writers of one event loop, handed to that loop once
/// per commit rather than once per writer.
///
/// A commit answers its writers one after another on the thread that committed. Each answer
/// used to be an `execute` of its own on the connection's event loop: a closure, a task
/// queued under the loop's locks, popped, run and freed, per writer, on the thread the next
/// commit waits for as much as on the loop. Now the first answer of a commit for a loop
/// schedules one ``deliver()`` there and the others join its queue; the loop then ends
/// every request that is queued, in the order the commit answered them.
///
/// The `Mutex` guards the queue only: it is never held across I/O or while a request ends.
final class LoopAnswers: Sendable {
    /// One writer's outcome: what ``Dispatcher/answered(_:)`` needs to end its request. A
    /// class, so that queueing and delivering it retains one object, not each of its parts.
    final class Answer: Sendable {
        let dispatcher: Dispatcher
        let writer: NIOLoopBound<ConnectionWriter>
        let call: Dispatcher.Call
        let place: Dispatcher.PreferencePlace
        let change: PreferenceDatabase.Change
        /// For a delete, whether the key existed; for a set, true. Or why the change failed.
        let result: Result<Bool, any Error>

        init(
            dispatcher: Dispatcher, writer: NIOLoopBound<ConnectionWriter>, call: Dispatcher.Call, place: Dispatcher.PreferencePlace,
            change: PreferenceDatabase.Change, result: Result<Bool, any Error>
        ) {
            self.dispatcher = dispatcher
            self.writer = writer
            self.call = call
            self.place = place
            self.change = change
            self.result = result
        }
    }

    private struct Queue {
        var answers: [Answer] = []
        /// A ``deliver()`` is scheduled on the loop and has not taken the queue yet.
        var scheduled = false
    }

    /// The event loop whose connections these answers are for.
    let loop: any EventLoop
    private let queue = Mutex(Queue())

    init(loop: any EventLoop) {
        self.loop = loop
    }

    /// Queues `answer`; the first of a batch schedules their delivery on ``loop``. From any thread.
    func post(_ answer: Answer) {
        let schedule = queue.withLock { queue in
            queue.answers.append(answer)
            defer { queue.scheduled = true }
            return !queue.scheduled
        }
        if schedule {
            loop.execute { self.deliver() }
        }
    }

    /// Ends every queued request, on ``loop``.
    private func deliver() {
        let answers = queue.withLock { queue in
            queue.scheduled = false
            defer { queue.answers = [] }
            return queue.answers
        }
        for answer in answers {
            answer.dispatcher.answered(answer)
        }
    }
}
