// Umbrella for the thread-per-rank host backend: chorus::host::Team and chorus::host::Comm.
#pragma once

#include "core.hpp"
#include "host/comm.hpp"
#include "host/team.hpp"
