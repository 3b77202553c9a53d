#include <petscsnes.h>
#include <petsctao.h>
#include <petscksp.h>
#include <petscvec.h>
#include <petscmat.h>
#include <petsclog.h>
