// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title CounterV1
/// @notice First implementation behind FeeslabProxy.
/// @dev Storage layout: 0: count, 1: lastCaller. A later version may only append slots.
contract CounterV1 {
    /// @notice How many increments.
    uint256 public count;
    /// @notice Who incremented last (the initializer after initialize()).
    address public lastCaller;

    /// @notice initialize() was already called, or the counter was used.
    error AlreadyInitialized();

    /// @notice One-time set-up through the proxy: records the caller; count starts at 0.
    function initialize() external {
        if (lastCaller != address(0)) revert AlreadyInitialized();
        lastCaller = msg.sender;
    }

    /// @notice Adds one to count.
    function increment() external {
        count += 1;
        lastCaller = msg.sender;
    }

    /// @notice Which implementation this is.
    function version() external pure returns (uint256) {
        return 1;
    }
}
