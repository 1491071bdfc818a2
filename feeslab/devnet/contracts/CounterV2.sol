// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// @title CounterV2
/// @notice Second implementation: CounterV1's layout with two slots appended.
/// @dev Storage layout: 0: count, 1: lastCaller (as V1), 2: step, 3: perCaller (mapping).
contract CounterV2 {
    /// @notice Sum of all increments.
    uint256 public count;
    /// @notice Who incremented last.
    address public lastCaller;
    /// @notice Amount increment() adds; 0 means 1.
    uint256 public step;
    /// @notice Sum each caller added.
    mapping(address => uint256) public perCaller;

    /// @notice Adds `step` (1 when step is 0) to count.
    function increment() external {
        _add(step == 0 ? 1 : step);
    }

    /// @notice Sets the amount increment() adds.
    function setStep(uint256 newStep) external {
        step = newStep;
    }

    /// @notice Adds `amount` to count.
    function incrementBy(uint256 amount) external {
        _add(amount);
    }

    /// @notice Which implementation this is.
    function version() external pure returns (uint256) {
        return 2;
    }

    function _add(uint256 amount) private {
        count += amount;
        lastCaller = msg.sender;
        perCaller[msg.sender] += amount;
    }
}
