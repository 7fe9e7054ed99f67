#if os(Linux)
import Foundation
import Testing

@testable import OTATransportBlueZ

/// Unix file descriptors (`h`) through the bus, the way BlueZ's AcquireWrite and AcquireNotify
/// hand out sockets.
@Suite(.needsLibDBus) struct DBusFileDescriptorTests {
    /// A connected pair of stream sockets.
    private static func socketPair() throws -> (DBusFileDescriptor, DBusFileDescriptor) {
        var descriptors: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &descriptors) == 0
        else {
            throw PrivateBusError("socketpair failed: errno \(errno)")
        }
        return (DBusFileDescriptor(taking: descriptors[0]), DBusFileDescriptor(taking: descriptors[1]))
    }

    private static func write(_ bytes: [UInt8], to descriptor: DBusFileDescriptor) {
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor.rawValue, $0.baseAddress, $0.count) }
        #expect(written == bytes.count)
    }

    private static func read(_ count: Int, from descriptor: DBusFileDescriptor) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var total = 0
        while total < count {
            let got = buffer.withUnsafeMutableBytes {
                Foundation.read(descriptor.rawValue, $0.baseAddress! + total, count - total)
            }
            guard got > 0 else { break }
            total += got
        }
        return Array(buffer.prefix(total))
    }

    private static func inode(of descriptor: DBusFileDescriptor) -> UInt64 {
        var status = stat()
        fstat(descriptor.rawValue, &status)
        return UInt64(status.st_ino)
    }

    @Test func anAcquiredSocketCarriesBytesBothWays() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            let (serverEnd, clientEnd) = try Self.socketPair()
            // Like GattCharacteristic1.AcquireWrite: returns (h fd, q mtu).
            try await server.export(
                DBusObject(path: "/char") { call in
                    guard call.member == "AcquireWrite" else { throw DBusError(name: .unknownMethod, message: "") }
                    return [.unixFD(clientEnd), .uint16(247)]
                }
            )
            let reply = try await client.call(
                .methodCall(
                    destination: server.uniqueName,
                    path: "/char",
                    interface: "org.bluez.GattCharacteristic1",
                    member: "AcquireWrite",
                    arguments: [.variantDictionary([:])]
                )
            )
            let (acquired, mtu) = try reply.decode(DBusFileDescriptor.self, UInt16.self)
            #expect(mtu == 247)
            #expect(acquired.rawValue >= 0)
            #expect(acquired.rawValue != clientEnd.rawValue)

            let chunk = (0..<244).map { UInt8(truncatingIfNeeded: $0) }
            Self.write(chunk, to: acquired)
            #expect(Self.read(chunk.count, from: serverEnd) == chunk)
            Self.write([0x60, 0x01, 0x01], to: serverEnd)
            #expect(Self.read(3, from: acquired) == [0x60, 0x01, 0x01])

            // Closing the acquired end is seen by the peer (the reply's own copy goes with the reply).
            acquired.close()
            clientEnd.close()
            _ = consume reply
            #expect(Self.read(1, from: serverEnd).isEmpty)
            await client.close()
            await server.close()
        }
    }

    @Test func anEchoedDescriptorIsTheSameFile() async throws {
        try await PrivateBus.with { bus in
            let server = try await bus.connect()
            let client = try await bus.connect()
            try await server.export(TestService.object())
            let (one, _) = try Self.socketPair()
            let reply = try await client.call(
                TestService.call("Echo", on: server, [.unixFD(one), .structure([.unixFD(one), .string("x")])])
            )
            let first = try #require(reply.arguments.first?.fileDescriptor)
            #expect(first != one)
            #expect(Self.inode(of: first) == Self.inode(of: one))
            #expect(reply.signature == "h(hs)")
            await client.close()
            await server.close()
        }
    }

    @Test func aTakenDescriptorCannotBeSent() async throws {
        try await PrivateBus.with { bus in
            let client = try await bus.connect()
            let (one, two) = try Self.socketPair()
            let raw = one.take()
            #expect(one.rawValue == -1)
            let error = await #expect(throws: DBusError.self) {
                try await client.send(.signal(path: "/a", interface: "a.b", member: "C", arguments: [.unixFD(one)]))
            }
            #expect(error?.name == .invalidArgs)
            _ = DBusFileDescriptor(taking: raw)
            two.close()
            await client.close()
        }
    }
}
#endif
