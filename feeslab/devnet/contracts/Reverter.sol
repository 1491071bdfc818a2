// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title Reverter
/// @notice One function per kind of revert data, for decoding reverts: Error(string),
///         Panic(uint256) codes, a custom error, and an empty revert.
/// @dev Storage layout: 0: _stack (empty dynamic array, only for popEmpty()).
contract Reverter {
    /// @notice A small enum; converting 3 or more to it panics.
    enum Color {
        Red,
        Green,
        Blue
    }

    uint256[] private _stack;

    /// @notice Custom error with arguments: selector keccak256("Unauthorized(address,uint256)")[:4].
    error Unauthorized(address caller, uint256 code);

    /// @notice Reverts with Error("feeslab: not allowed").
    function reasonRevert() external pure {
        require(false, "feeslab: not allowed");
    }

    /// @notice Reverts with Panic(0x01), a failed assert.
    function assertFail() external pure {
        assert(false);
    }

    /// @notice a / b; Panic(0x12) when b == 0.
    function divide(uint256 a, uint256 b) external pure returns (uint256) {
        return a / b;
    }

    /// @notice a - 1; Panic(0x11) when a == 0.
    function underflow(uint256 a) external pure returns (uint256) {
        return a - 1;
    }

    /// @notice Element i of a three-element memory array; Panic(0x32) when i >= 3.
    function outOfBounds(uint256 i) external pure returns (uint256) {
        uint256[3] memory items = [uint256(10), 20, 30];
        return items[i];
    }

    /// @notice Converts x to Color; Panic(0x21) when x >= 3.
    function badEnum(uint256 x) external pure returns (Color) {
        return Color(x);
    }

    /// @notice Pops an empty storage array: Panic(0x31).
    function popEmpty() external {
        _stack.pop();
    }

    /// @notice Reverts with Unauthorized(msg.sender, code).
    function customRevert(uint256 code) external view {
        revert Unauthorized(msg.sender, code);
    }

    /// @notice Reverts with no data at all.
    function emptyRevert() external pure {
        revert();
    }

    /// @notice Succeeds: returns x * 2.
    function ok(uint256 x) external pure returns (uint256) {
        return x * 2;
    }
}
