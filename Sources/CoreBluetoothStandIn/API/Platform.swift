import Foundation

/// Darwin's name for a dispatch queue; CoreBluetooth's initialisers take one.
// swift-format-ignore: TypeNamesShouldBeCapitalized
public typealias dispatch_queue_t = DispatchQueue

/// Seconds since 1 January 2001, as Darwin's CoreFoundation defines it (a `CFTimeInterval`).
public typealias CFAbsoluteTime = Double
