import Foundation
import Testing

/// The behaviours of git's credential-helper test library (`t/lib-credential.sh`, `helper_test` in git
/// 2.39), each run against the built helper with a private keychain, plus the newer fields
/// (`password_expiry_utc`, `oauth_refresh_token`) and bad input.
@Suite struct HelperProtocolTests {
    /// Runs `body` with a fresh sandbox, removed afterwards.
    func withSandbox(_ body: (HelperSandbox) throws -> Void) throws {
        let sandbox = try HelperSandbox()
        defer { sandbox.remove() }
        try body(sandbox)
    }

    /// Runs the helper and expects exit status 0 and exactly `expected` on standard output.
    func expect(
        _ sandbox: HelperSandbox, _ operation: String, _ input: String, prints expected: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let result = try sandbox.helper(operation, input)
        #expect(result.status == 0, "\(operation) failed: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout == expected, sourceLocation: sourceLocation)
        #expect(result.stderr == "", sourceLocation: sourceLocation)
    }

    /// Has no existing data.
    @Test("has no existing data")
    func noExistingData() throws {
        try withSandbox { sb in
            try expect(sb, "get", "protocol=https\nhost=example.com\n")
        }
    }

    /// Stores, retrieves and erases a password.
    @Test("stores, retrieves and erases a password")
    func storeGetErase() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=store-user\npassword=store-pass\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=store-user\npassword=store-pass\n")
            try expect(
                sb, "get", "protocol=https\nhost=example.com\nusername=store-user\n\n",
                prints: "username=store-user\npassword=store-pass\n")
            try expect(sb, "erase", "protocol=https\nhost=example.com\nusername=store-user\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n")
        }
    }

    /// Requires matching protocol, host, port and username; get of an unknown host prints nothing.
    @Test("requires matching protocol, host, port and username; get of an unknown host prints nothing")
    func requiresMatch() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=store-user\npassword=store-pass\n")
            try expect(sb, "get", "protocol=http\nhost=example.com\n")
            try expect(sb, "get", "protocol=https\nhost=other.tld\n")
            try expect(sb, "get", "protocol=https\nhost=example.com:8443\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=other\n")
        }
    }

    /// A port is part of the host.
    @Test("a port is part of the host")
    func ports() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=http\nhost=127.0.0.1:8080\nusername=u\npassword=p8080\n")
            try expect(sb, "store", "protocol=http\nhost=127.0.0.1\nusername=u\npassword=p80\n")
            try expect(sb, "get", "protocol=http\nhost=127.0.0.1:8080\n", prints: "username=u\npassword=p8080\n")
            try expect(sb, "get", "protocol=http\nhost=127.0.0.1\n", prints: "username=u\npassword=p80\n")
            try expect(sb, "erase", "protocol=http\nhost=127.0.0.1:8080\n")
            try expect(sb, "get", "protocol=http\nhost=127.0.0.1\n", prints: "username=u\npassword=p80\n")
        }
    }

    /// Credential.useHttpPath: a credential stored for one path is not returned for another.
    @Test("credential.useHttpPath: a credential stored for one path is not returned for another")
    func requiresMatchingPath() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=http\nhost=path.tld\npath=foo.git\nusername=user\npassword=pass\n")
            try expect(sb, "get", "protocol=http\nhost=path.tld\npath=bar.git\n")
            try expect(sb, "get", "protocol=http\nhost=path.tld\npath=foo.git\n", prints: "username=user\npassword=pass\n")
            // Without useHttpPath git sends no path: any path matches, as in git's own matching.
            try expect(sb, "get", "protocol=http\nhost=path.tld\n", prints: "username=user\npassword=pass\n")
            // Stored without a path: not returned for a request naming a path.
            try expect(sb, "store", "protocol=http\nhost=nopath.tld\nusername=user\npassword=pass2\n")
            try expect(sb, "get", "protocol=http\nhost=nopath.tld\npath=foo.git\n")
            try expect(sb, "get", "protocol=http\nhost=nopath.tld\n", prints: "username=user\npassword=pass2\n")
            // The same user on two paths is two credentials.
            try expect(sb, "store", "protocol=http\nhost=path.tld\npath=bar.git\nusername=user\npassword=bar-pass\n")
            try expect(sb, "get", "protocol=http\nhost=path.tld\npath=foo.git\n", prints: "username=user\npassword=pass\n")
            try expect(sb, "get", "protocol=http\nhost=path.tld\npath=bar.git\n", prints: "username=user\npassword=bar-pass\n")
        }
    }

    /// Can forget host: no match after erase.
    @Test("can forget host: no match after erase")
    func forgetHost() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user1\npassword=pass1\n")
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user2\npassword=pass2\n")
            try expect(sb, "erase", "protocol=https\nhost=example.com\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=user1\n")
        }
    }

    /// Can store multiple users; without a username the most recently stored is returned.
    @Test("can store multiple users; without a username the most recently stored is returned")
    func multipleUsers() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user1\npassword=pass1\n")
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user2\npassword=pass2\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=user1\n", prints: "username=user1\npassword=pass1\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=user2\n", prints: "username=user2\npassword=pass2\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=user2\npassword=pass2\n")
            // Storing user1 again (a new password) makes it the most recent.
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user1\npassword=pass1b\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=user1\npassword=pass1b\n")
        }
    }

    /// Can forget one user and remembers the other.
    @Test("can forget one user and remembers the other")
    func forgetUser() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user1\npassword=pass1\n")
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user2\npassword=pass2\n")
            try expect(sb, "erase", "protocol=https\nhost=example.com\nusername=user1\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=user1\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=user2\n", prints: "username=user2\npassword=pass2\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=user2\npassword=pass2\n")
        }
    }

    /// Can store an empty username.
    @Test("can store an empty username")
    func emptyUsername() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=sub.example.com\nusername=\npassword=pass\n")
            try expect(sb, "get", "protocol=https\nhost=sub.example.com\n", prints: "username=\npassword=pass\n")
        }
    }

    /// Erase with a password removes the credential only if the password matches.
    @Test("erase with a password removes the credential only if the password matches")
    func eraseWithPassword() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user\npassword=new\n")
            try expect(sb, "erase", "protocol=https\nhost=example.com\nusername=user\npassword=old\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=user\npassword=new\n")
            try expect(sb, "erase", "protocol=https\nhost=example.com\nusername=user\npassword=new\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n")
        }
    }

    /// An expired password is never returned.
    @Test("an expired password is never returned")
    func expiredPassword() throws {
        try withSandbox { sb in
            // Already expired when stored: not kept.
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user\npassword=pass\npassword_expiry_utc=1\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n")
            // Valid when stored, expired by the time it is asked for (three seconds leave room for a loaded machine).
            let soon = Int(Date().timeIntervalSince1970) + 3
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user\npassword=pass\npassword_expiry_utc=\(soon)\n")
            try expect(
                sb, "get", "protocol=https\nhost=example.com\n",
                prints: "username=user\npassword=pass\npassword_expiry_utc=\(soon)\n")
            usleep(4_100_000)
            try expect(sb, "get", "protocol=https\nhost=example.com\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=user\n")
            // An unexpired credential of another user is still returned.
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=other\npassword=fresh\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=other\npassword=fresh\n")
        }
    }

    /// Password_expiry_utc and oauth_refresh_token are kept with the password.
    @Test("password_expiry_utc and oauth_refresh_token are kept with the password")
    func extrasRoundTrip() throws {
        try withSandbox { sb in
            try expect(
                sb, "store",
                """
                protocol=https
                host=example.com
                username=user
                password=access
                password_expiry_utc=9999999999
                oauth_refresh_token=refresh-secret

                """)
            try expect(
                sb, "get", "protocol=https\nhost=example.com\n",
                prints: "username=user\npassword=access\npassword_expiry_utc=9999999999\noauth_refresh_token=refresh-secret\n")
            // A later store without the extras replaces them.
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user\npassword=plain\n")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=user\npassword=plain\n")
        }
    }

    /// git's protocol is bytes; this helper keeps its fields as text, so a username, host or path that is not
    /// UTF-8 is refused with a message (errSecParam), never stored or matched under a repaired name that another
    /// credential could share (issue 30, item 8).
    @Test("a username or host that is not UTF-8 is refused with a message, never merged with another")
    func nonUTF8FieldsAreRefused() throws {
        try withSandbox { sb in
            func credential(_ key: String, _ byte: UInt8, password: String? = nil) -> Data {
                var fields: [String: [UInt8]] = [
                    "protocol": Array("https".utf8), "host": Array("example.com".utf8),
                    "username": Array("user".utf8),
                ]
                fields[key] = Array("x".utf8) + [byte]
                var data = Data()
                for key in ["protocol", "host", "username"] {
                    data.append(contentsOf: Array(key.utf8) + [UInt8(ascii: "=")] + (fields[key] ?? []) + [0x0A])
                }
                if let password { data.append(contentsOf: Array("password=\(password)\n".utf8)) }
                return data
            }
            for key in ["username", "host"] {
                for operation in ["store", "get", "erase"] {
                    let refused = try sb.helper(operation, bytes: credential(key, 0xFF, password: "one"))
                    #expect(refused.status == 1)
                    #expect(refused.stdout == "")
                    #expect(refused.stderr == "git-credential-keychain: cannot \(operation) the credential: its \(key) is not UTF-8 text, and the keychain keeps git's fields as text (-50)\n")
                }
            }
            // Nothing was stored under a repaired name: the U+FFFD credential is a credential of its own.
            try expect(sb, "get", "protocol=https\nhost=example.com\nusername=x\u{FFFD}\n")
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=x\u{FFFD}\npassword=text\n")
            let other = try sb.helper("get", bytes: credential("username", 0xFE))
            #expect(other.status == 1 && other.stdout == "")
            try expect(
                sb, "get", "protocol=https\nhost=example.com\nusername=x\u{FFFD}\n",
                prints: "username=x\u{FFFD}\npassword=text\n")
        }
    }

    /// Bad input is ignored quietly.
    @Test("bad input is ignored quietly")
    func badInput() throws {
        try withSandbox { sb in
            try expect(sb, "store", "protocol=https\nhost=example.com\nusername=user\npassword=pass\n")
            // Unknown operations and no operation at all.
            for operation in ["list", "", "GET"] {
                try expect(sb, operation, "protocol=https\nhost=example.com\n")
            }
            let none = try sb.helper(nil, "protocol=https\nhost=example.com\n")
            #expect(none.status == 0 && none.stdout == "" && none.stderr == "")
            // No host, empty host, unknown protocol, bad port.
            try expect(sb, "get", "protocol=https\n")
            try expect(sb, "get", "protocol=https\nhost=\n")
            try expect(sb, "get", "protocol=gopher\nhost=example.com\n")
            try expect(sb, "get", "protocol=https\nhost=example.com:http\n")
            try expect(sb, "get", "protocol=https\nhost=example.com:99999\n")
            try expect(sb, "store", "host=example.com\nusername=u\npassword=p\n")
            try expect(sb, "get", "")
            // A malformed line or bytes that are not UTF-8 make the whole request void: erase removes nothing. (A
            // field the helper uses that is not UTF-8 is refused with a message: see nonUTF8FieldsAreRefused.)
            try expect(sb, "erase", "protocol=https\nhost=example.com\nthis line has no equals sign\nusername=someone\n")
            var bytes = Data("protocol=https\nhost=example.com\nusername=".utf8)
            bytes.append(contentsOf: [0xFF, 0xFE, 0x0A])
            let nonUTF8 = try sb.helper("erase", bytes: bytes)
            #expect(nonUTF8.status == 1 && nonUTF8.stdout == "")
            var unknownKey = Data("protocol=https\nhost=example.com\nwwwauth[]=".utf8)
            unknownKey.append(contentsOf: [0xFF, 0x0A])
            let ignored = try sb.helper("erase", bytes: unknownKey)
            #expect(ignored.status == 0 && ignored.stdout == "" && ignored.stderr == "")
            let nul = try sb.helper("erase", bytes: Data("protocol=https\nhost=example.com\u{0}\n".utf8))
            #expect(nul.status == 0 && nul.stdout == "")
            try expect(sb, "get", "protocol=https\nhost=example.com\n", prints: "username=user\npassword=pass\n")
            // Unknown keys are ignored; input after a blank line is not part of the credential.
            try expect(
                sb, "get", "capability[]=authtype\nprotocol=https\nhost=example.com\nwwwauth[]=Basic realm=x\n\nhost=other\n",
                prints: "username=user\npassword=pass\n")
            // CRLF line ends are accepted.
            try expect(sb, "get", "protocol=https\r\nhost=example.com\r\n\r\n", prints: "username=user\npassword=pass\n")
        }
    }
}
