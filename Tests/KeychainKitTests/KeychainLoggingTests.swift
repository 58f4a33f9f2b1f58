import Foundation
import InMemoryLogging
import KeychainKit
import Logging
import Testing

@Suite struct KeychainLoggingTests {
    @Test func operationsAreLoggedWithoutValues() throws {
        let handler = InMemoryLogHandler()
        var logger = Logger(label: "test") { _ in handler }
        logger.logLevel = .trace
        try withTemporaryDirectory { directory in
            let store = try KeychainStore(directory: directory, accessGroups: ["LOGGROUPMARKER"], logger: logger)
            let keychain = Keychain(service: "LOGSERVICEMARKER", in: store).label("LOGLABELMARKER")
            try keychain.set("LOGSECRETMARKER", for: "LOGACCOUNTMARKER")
            #expect(try keychain.string(for: "LOGACCOUNTMARKER") == "LOGSECRETMARKER")
            try keychain.remove("LOGACCOUNTMARKER")
        }
        let lines = handler.entries.map { "\($0.message) \($0.metadata)" }
        // The operations were logged, with their class…
        #expect(lines.contains { $0.contains("add") && $0.contains("genp") })
        #expect(lines.contains { $0.contains("delete") && $0.contains("genp") })
        // …and never a value.
        for line in lines {
            for marker in ["LOGSECRETMARKER", "LOGACCOUNTMARKER", "LOGSERVICEMARKER", "LOGLABELMARKER", "LOGGROUPMARKER"] {
                #expect(!line.contains(marker), "\(marker) logged: \(line)")
            }
        }
    }
}
