import KeychainCore
import Testing

/// Expects `body` to throw a ``KeychainError`` with exactly `code` (and `status`, when given), recording an issue
/// that names what was thrown instead. Returns the error for further checks.
@discardableResult
public func expectKeychainError<R>(
    _ code: KeychainError.Code, status: KeychainStatus? = nil, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) -> KeychainError? {
    do {
        _ = try body()
        Issue.record(
            "Expected a KeychainError \(code)\(status.map { " (\($0.rawValue))" } ?? ""), but nothing was thrown. \(comment.map { "\($0)" } ?? "")",
            sourceLocation: sourceLocation)
        return nil
    } catch let error as KeychainError {
        #expect(error.code == code, comment, sourceLocation: sourceLocation)
        if let status { #expect(error.status == status, comment, sourceLocation: sourceLocation) }
        return error
    } catch {
        Issue.record("Expected a KeychainError \(code), but \(type(of: error)) was thrown: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}

/// Expects `body` to fail with `status` (an `OSStatus` Apple's API returns), whatever the error's code.
@discardableResult
public func expectKeychainStatus<R>(
    _ status: KeychainStatus, _ comment: Comment? = nil, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> R
) -> KeychainError? {
    do {
        _ = try body()
        Issue.record("Expected OSStatus \(status.rawValue), but nothing was thrown.", sourceLocation: sourceLocation)
        return nil
    } catch let error as KeychainError {
        #expect(error.status == status, comment, sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("Expected OSStatus \(status.rawValue), but \(type(of: error)) was thrown: \(error)", sourceLocation: sourceLocation)
        return nil
    }
}
