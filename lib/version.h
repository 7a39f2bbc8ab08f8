/* version.h - the toolkit's version string, shared by every tool and stored in run.db. */
#ifndef TR_LIB_VERSION_H
#define TR_LIB_VERSION_H
#define TR_VERSION "0.1.0"
#endif
