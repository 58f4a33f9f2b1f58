import Foundation

/// A KeePass XML export (what `keepassxc-cli import` reads) of a database called `name` with `count` entries in its
/// root group: entry *i* has the title `entry i`, user name `useri`, URL `https://sitei.example.com` and password
/// `secret-i`, and a UUID of its own.
public func keePassXML(name: String, entries count: Int) -> String {
    var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?><KeePassFile><Meta><DatabaseName>\(name)</DatabaseName></Meta><Root><Group><Name>Root</Name>"
    for index in 0..<count {
        let uuid = Data((0..<16).map { UInt8(truncatingIfNeeded: index >> ($0 % 2 * 8)) ^ UInt8($0) }).base64EncodedString()
        xml += "<Entry><UUID>\(uuid)</UUID><String><Key>Title</Key><Value>entry \(index)</Value></String>"
        xml += "<String><Key>UserName</Key><Value>user\(index)</Value></String><String><Key>URL</Key><Value>https://site\(index).example.com</Value></String>"
        xml += "<String><Key>Password</Key><Value>secret-\(index)</Value></String></Entry>"
    }
    return xml + "</Group></Root></KeePassFile>"
}
